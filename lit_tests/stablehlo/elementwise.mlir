// RUN: accy-opt --import-stablehlo %s | filecheck %s

// CHECK-LABEL: func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
// CHECK-NEXT:    %0 = accy.add %arg0, %arg1 : tensor<4xf32>
// CHECK-NEXT:    %1 = accy.subtract %0, %arg1 : tensor<4xf32>
// CHECK-NEXT:    %2 = accy.multiply %1, %arg0 : tensor<4xf32>
// CHECK-NEXT:    %3 = accy.divide %2, %arg1 : tensor<4xf32>
// CHECK-NEXT:    %4 = accy.maximum %3, %arg0 : tensor<4xf32>
// CHECK-NEXT:    %5 = accy.minimum %4, %arg1 : tensor<4xf32>
// CHECK-NEXT:    %6 = accy.power %5, %arg0 : tensor<4xf32>
// CHECK-NEXT:    %7 = accy.negate %6 : tensor<4xf32>
// CHECK-NEXT:    %8 = accy.abs %7 : tensor<4xf32>
// CHECK-NEXT:    %9 = accy.exponential %8 : tensor<4xf32>
// CHECK-NEXT:    %10 = accy.log %9 : tensor<4xf32>
// CHECK-NEXT:    %11 = accy.tanh %10 : tensor<4xf32>
// CHECK-NEXT:    %12 = accy.sqrt %11 : tensor<4xf32>
// CHECK-NEXT:    %13 = accy.rsqrt %12 : tensor<4xf32>
// CHECK-NEXT:    %14 = accy.logistic %13 : tensor<4xf32>
// CHECK-NEXT:    %15 = accy.add %arg2, %arg2 : tensor<4xi32>
// CHECK-NEXT:    %16 = accy.abs %15 : tensor<4xi32>
// CHECK-NEXT:    func.return %14, %16 : tensor<4xf32>, tensor<4xi32>
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
  %1 = stablehlo.subtract %0, %arg1 : tensor<4xf32>
  %2 = stablehlo.multiply %1, %arg0 : tensor<4xf32>
  %3 = stablehlo.divide %2, %arg1 : tensor<4xf32>
  %4 = stablehlo.maximum %3, %arg0 : tensor<4xf32>
  %5 = stablehlo.minimum %4, %arg1 : tensor<4xf32>
  %6 = stablehlo.power %5, %arg0 : tensor<4xf32>
  %7 = stablehlo.negate %6 : tensor<4xf32>
  %8 = stablehlo.abs %7 : tensor<4xf32>
  %9 = stablehlo.exponential %8 : tensor<4xf32>
  %10 = stablehlo.log %9 : tensor<4xf32>
  %11 = stablehlo.tanh %10 : tensor<4xf32>
  %12 = stablehlo.sqrt %11 : tensor<4xf32>
  %13 = stablehlo.rsqrt %12 : tensor<4xf32>
  %14 = stablehlo.logistic %13 : tensor<4xf32>
  %15 = stablehlo.add %arg2, %arg2 : tensor<4xi32>
  %16 = stablehlo.abs %15 : tensor<4xi32>
  return %14, %16 : tensor<4xf32>, tensor<4xi32>
}
