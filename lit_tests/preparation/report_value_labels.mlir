// Report labels name values as the printed program does (`%r_1`, unnamed values numbered
// among themselves).
//
// RUN: accy-opt %s -p accy-plan-memory-spaces --accy-report=memory 2>&1 >/dev/null | filecheck %s

// CHECK:      slot  function  value  role
// CHECK-NEXT: 0     @f        %a     input
// CHECK-NEXT: 1     @f        %0     temporary
// CHECK-NEXT: 2     @f        %r     output
// CHECK-NEXT: 3     @f        %r_1   output
func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = accy.negate %a : tensor<4xf32>
  %r:2 = accy.iterate 2 iter_args(%p = %a, %q = %0) : tensor<4xf32>, tensor<4xf32> {
    accy.yield %q, %p : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
