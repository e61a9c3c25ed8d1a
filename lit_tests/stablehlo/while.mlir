// RUN: accy-opt --import-stablehlo %s | filecheck %s

// A while that is not a counted loop (its cond reduces the carried value) is an
// accy.while: cond and body imported as they are.
// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %0 = accy.while(%arg0 : tensor<4xf32>) -> (tensor<4xf32>) cond {
// CHECK-NEXT:    ^bb0(%1: tensor<4xf32>):
// CHECK-NEXT:    %2 = accy.reduce max %1, dims = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT:    %3 = accy.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %4 = accy.compare GT, %2, %3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:    accy.yield %4 : tensor<i1>
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^bb0(%5: tensor<4xf32>):
// CHECK-NEXT:    %6 = accy.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK-NEXT:    %7 = accy.multiply %5, %6 : tensor<4xf32>
// CHECK-NEXT:    accy.yield %7 : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %0 : tensor<4xf32>
// CHECK-NEXT:    }
func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.while(%v = %x) : tensor<4xf32>
   cond {
    %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %m = stablehlo.reduce(%v init: %init) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %more = stablehlo.compare GT, %m, %one : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %more : tensor<i1>
  } do {
    %half = stablehlo.constant dense<0.5> : tensor<4xf32>
    %next = stablehlo.multiply %v, %half : tensor<4xf32>
    stablehlo.return %next : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
