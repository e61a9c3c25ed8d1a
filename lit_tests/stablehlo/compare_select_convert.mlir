// RUN: accy-opt --import-stablehlo %s | filecheck %s

// CHECK-LABEL: func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>) {
// CHECK-NEXT:    %0 = accy.compare GE, %arg0, %arg1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %1 = accy.select %0, %arg0, %arg1 : tensor<2x3xi1>, tensor<2x3xf32>
// CHECK-NEXT:    %2 = accy.convert %1 : (tensor<2x3xf32>) -> tensor<2x3xi32>
// A scalar predicate is broadcast to the operands' shape.
// CHECK-NEXT:    %3 = accy.broadcast_in_dim %arg2, dims = [] : (tensor<i1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %4 = accy.select %3, %arg0, %1 : tensor<2x3xi1>, tensor<2x3xf32>
// CHECK-NEXT:    func.return %1, %2, %4 : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>
func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>) {
  %0 = stablehlo.compare  GE, %arg0, %arg1,  FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %1 = stablehlo.select %0, %arg0, %arg1 : tensor<2x3xi1>, tensor<2x3xf32>
  %2 = stablehlo.convert %1 : (tensor<2x3xf32>) -> tensor<2x3xi32>
  %3 = stablehlo.select %arg2, %arg0, %1 : tensor<i1>, tensor<2x3xf32>
  return %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>
}
