// Report labels name values as the printed program does (unnamed values numbered among
// themselves; the loop's second result takes the slot of %0, its init computed for it
// alone, so %0 is listed as the output).
//
// RUN: accy-opt %s -p accy-plan-memory-spaces --accy-report=memory 2>&1 >/dev/null | filecheck %s

// CHECK:      slot  function  value  role
// CHECK-NEXT: 0     @f        %a     input
// CHECK-NEXT: 1     @f        %0     output
// CHECK-NEXT: 2     @f        %r     output
func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = accy.negate %a : tensor<4xf32>
  %r:2 = accy.iterate 2 iter_args(%p = %a, %q = %0) : tensor<4xf32>, tensor<4xf32> {
    accy.yield %q, %p : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
