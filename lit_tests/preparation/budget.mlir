// The work budget: the planning analyses' estimates are charged before they run.
// For this file (4 ops, 3 values, 11 symbol bytes) they sum to 63 structural visits:
// shapes 7 + fusion 12 + schedule 5 + buffers 15 + memory 24. One visit less is refused
// with exit status 1 and a single error line; the exact sum is admitted, also when the
// five planning passes run one after the other (each analysis is charged once).
//
// RUN: not accy-opt %s -p accy-plan-memory-spaces --accy-max-work=62 2>&1 | filecheck %s --check-prefix=REFUSED
// RUN: not accy-opt %s -p accy-plan-memory-spaces --accy-max-work=0 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: accy-opt %s -p accy-plan-memory-spaces --accy-max-work=63 | filecheck %s --check-prefix=ADMITTED
// RUN: accy-opt %s -p accy-plan-shapes,accy-plan-fusion,accy-plan-schedule,accy-plan-buffers,accy-plan-memory-spaces --accy-max-work=63 | filecheck %s --check-prefix=ADMITTED
// RUN: not accy-opt %s -p accy-plan-memory-spaces --accy-max-work=-1 2>&1 | filecheck %s --check-prefix=NEGATIVE

// REFUSED:     error: work budget exhausted: analysis 'accy-schedule-plan' needs 5 structural visits but only 4 remain{{.*}}
// REFUSED-NOT: {{.}}

// ZERO:      error: work budget exhausted: analysis 'accy-memory-space-plan' needs 24 structural visits but only 0 remain{{.*}}
// ZERO-NOT:  {{.}}

// NEGATIVE: error:
// NEGATIVE-NOT: Traceback

// ADMITTED: accy.memory = "slot 2 device_global write_only device_to_host 16 bytes kernel 0"

func.func @memory_add4(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %a, %b : tensor<4xf32>
  func.return %s : tensor<4xf32>
}
