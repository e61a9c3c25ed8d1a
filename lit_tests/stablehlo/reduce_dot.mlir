// RUN: accy-opt --import-stablehlo %s | filecheck %s

// Identity inits vanish; other inits are combined after the reduction.
// CHECK-LABEL: func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3x4xf32>, %arg2: tensor<2x4x5xf32>)
// CHECK-NEXT:    %0 = accy.reduce add %arg0, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %1 = accy.reduce max %arg0, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %2 = accy.reduce min %arg0, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT:    %3 = accy.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %4 = accy.reduce mul %arg0, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %5 = accy.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<2xf32>
// CHECK-NEXT:    %6 = accy.multiply %4, %5 : tensor<2xf32>
// CHECK-NEXT:    %7 = accy.dot_general %arg1, %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %6, %7
func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3x4xf32>, %arg2: tensor<2x4x5xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<f32>, tensor<2xf32>, tensor<2x3x5xf32>) {
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = stablehlo.reduce(%arg0 init: %ninf) applies stablehlo.maximum across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %2 = stablehlo.reduce(%arg0 init: %inf) across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    reducer(%a: tensor<f32>, %b: tensor<f32>) {
      %m = stablehlo.minimum %b, %a : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }
  %two = stablehlo.constant dense<2.000000e+00> : tensor<f32>
  %3 = stablehlo.reduce(%arg0 init: %two) applies stablehlo.multiply across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  %4 = stablehlo.dot_general %arg1, %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<3xf32>, tensor<f32>, tensor<2xf32>, tensor<2x3x5xf32>
}
