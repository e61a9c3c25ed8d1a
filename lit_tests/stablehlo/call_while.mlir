// RUN: accy-opt --import-stablehlo %s | filecheck %s

// Private functions are inlined at each call and not kept; the counted while loop
// becomes accy.iterate over the carried values other than the counter.
// CHECK-LABEL: func.func @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>, tensor<i32>) {
// CHECK-NEXT:    %0 = accy.iterate 4 iter_args(%1 = %arg0) : tensor<3xf32> {
// CHECK-NEXT:      %2 = accy.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:      %3 = accy.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT:      %4 = accy.multiply %1, %3 : tensor<3xf32>
// CHECK-NEXT:      accy.yield %4 : tensor<3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %5 = accy.constant dense<5> : tensor<i32>
// CHECK-NEXT:    %6 = accy.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %7 = accy.broadcast_in_dim %6, dims = [] : (tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT:    %8 = accy.multiply %0, %7 : tensor<3xf32>
// CHECK-NEXT:    func.return %8, %5 : tensor<3xf32>, tensor<i32>
// CHECK-NEXT:  }
// CHECK-NOT:   func.func
func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>, tensor<i32>) {
  %c = stablehlo.constant dense<1> : tensor<i32>
  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<3xf32>
   cond {
    %c_1 = stablehlo.constant dense<5> : tensor<i32>
    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = func.call @halve(%iterArg_0) : (tensor<3xf32>) -> tensor<3xf32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.add %iterArg, %c_1 : tensor<i32>
    stablehlo.return %2, %1 : tensor<i32>, tensor<3xf32>
  }
  %3 = call @halve(%0#1) : (tensor<3xf32>) -> tensor<3xf32>
  return %3, %0#0 : tensor<3xf32>, tensor<i32>
}
func.func private @halve(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %1 = stablehlo.multiply %arg0, %0 : tensor<3xf32>
  return %1 : tensor<3xf32>
}
