// RUN: accy-opt %s --accy-target=cuda -p accy-plan-schedule | filecheck %s
// RUN: accy-opt %s --accy-target=cuda -p accy-plan-schedule --accy-report=schedule 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// One work item per fusion group, numbered 0, 1, 2, … across the module in program
// order; its root carries `ID KIND` (and `in LOOP` inside a loop body). Fused-away
// members carry nothing; constants are no work.

// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %k = accy.constant dense<1.000000e+00> : tensor<2x3xf32>{{$}}
// CHECK-NEXT:    %e = accy.exponential %x : tensor<2x3xf32>{{$}}
// CHECK-NEXT:    %sum = accy.reduce add %e, dims = [1] {accy.work_item = "0 reduce"}
// CHECK-NEXT:    %b = accy.broadcast_in_dim %sum, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>{{$}}
// CHECK-NEXT:    %d = accy.divide %x, %b {accy.work_item = "1 elementwise"}
// CHECK-NEXT:    %t = accy.transpose %d, dims = [1, 0] {accy.work_item = "2 transpose"}
// CHECK-NEXT:    %g = accy.dot_general %k, %t
// CHECK-SAME:      {accy.work_item = "3 dot"}
func.func @softmax(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %k = accy.constant dense<1.0> : tensor<2x3xf32>
  %e = accy.exponential %x : tensor<2x3xf32>
  %sum = accy.reduce add %e, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %b = accy.broadcast_in_dim %sum, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
  %d = accy.divide %x, %b : tensor<2x3xf32>
  %t = accy.transpose %d, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %g = accy.dot_general %k, %t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %g : tensor<2x2xf32>
}

// A loop is a work item of kind `iterate` followed by the items of its body; nested
// loops name their own parent.
// CHECK-LABEL: func.func @loops(
// CHECK-NEXT:    %r, %r_1 = accy.iterate 3
// CHECK-NEXT:      %in = accy.iterate 2
// CHECK-NEXT:        %p2 = accy.add %i, %q : tensor<2x3xf32>{{$}}
// CHECK-NEXT:        %t = accy.tanh %p2 {accy.work_item = "6 elementwise in 5"}
// CHECK-NEXT:        accy.yield %t
// CHECK-NEXT:      } {accy.work_item = "5 iterate in 4"}
// CHECK-NEXT:      %n = accy.negate %in {accy.work_item = "7 elementwise in 4"}
// CHECK-NEXT:      accy.yield %n, %q
// CHECK-NEXT:    } {accy.work_item = ["4 iterate", "4 iterate"]}
// CHECK-NEXT:    %c = accy.scan add %r, %s, dim = 1 {accy.work_item = "8 scan"}
// CHECK-NEXT:    %flat = accy.reshape %c : (tensor<2x3xf32>) -> tensor<6xf32>{{$}}
// CHECK-NEXT:    %back = accy.reshape %flat {accy.work_item = "9 reshape"}
// CHECK-NEXT:    %big = accy.broadcast_in_dim %v, dims = [1] {accy.work_item = "10 broadcast"}
func.func @loops(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<2x3xf32>, %v: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %r:2 = accy.iterate 3 iter_args(%p = %x, %q = %y) : tensor<2x3xf32>, tensor<2x3xf32> {
    %in = accy.iterate 2 iter_args(%i = %p) : tensor<2x3xf32> {
      %p2 = accy.add %i, %q : tensor<2x3xf32>
      %t = accy.tanh %p2 : tensor<2x3xf32>
      accy.yield %t : tensor<2x3xf32>
    }
    %n = accy.negate %in : tensor<2x3xf32>
    accy.yield %n, %q : tensor<2x3xf32>, tensor<2x3xf32>
  }
  %c = accy.scan add %r#0, %s, dim = 1 : tensor<2x3xf32>
  %flat = accy.reshape %c : (tensor<2x3xf32>) -> tensor<6xf32>
  %back = accy.reshape %flat : (tensor<6xf32>) -> tensor<2x3xf32>
  %big = accy.broadcast_in_dim %v, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return %back, %r#1, %big : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// REPORT:      schedule: 11 work item(s); CUDA target: shared memory limit 49152 bytes per block (the CPU target uses no shared memory)
// REPORT-NEXT: item  function  kind         root                   ops  in loop  family      cuda shared bytes
// REPORT-NEXT: 0     @softmax  reduce       accy.reduce            2    -        reduce.row  1024
// REPORT-NEXT: 1     @softmax  elementwise  accy.divide            2    -        -           0
// REPORT-NEXT: 2     @softmax  transpose    accy.transpose         1    -        -           0
// REPORT-NEXT: 3     @softmax  dot          accy.dot_general       1    -        dot.tiled   2048
// REPORT-NEXT: 4     @loops    iterate      accy.iterate           1    -        -           0
// REPORT-NEXT: 5     @loops    iterate      accy.iterate           1    4        -           0
// REPORT-NEXT: 6     @loops    elementwise  accy.tanh              2    5        -           0
// REPORT-NEXT: 7     @loops    elementwise  accy.negate            1    4        -           0
// REPORT-NEXT: 8     @loops    scan         accy.scan              1    -        scan.block  128
// REPORT-NEXT: 9     @loops    reshape      accy.reshape           2    -        -           0
// REPORT-NEXT: 10    @loops    broadcast    accy.broadcast_in_dim  1    -        -           0
// REPORT-NOT:  {{.}}
