// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The ops added for the StableHLO importer: iota, concatenate, slice.
// CHECK-LABEL: func.func @new_ops(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %d: tensor<?x3xf32>) -> tensor<6x3xf32> {
// CHECK-NEXT:    %0 = accy.iota dim = 0 : tensor<4x3xi32>
// CHECK-NEXT:    %1 = accy.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT:    %2 = accy.slice %b [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %3 = accy.concatenate %d, %a, dim = 0 : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %4 = accy.slice %d [0:1, 2:3] : (tensor<?x3xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    func.return %1 : tensor<6x3xf32>
// GENERIC:       %0 = "accy.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<4x3xi32>
// GENERIC-NEXT:  %1 = "accy.concatenate"(%a, %b) <{dimension = 0 : i64}> : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
// GENERIC-NEXT:  %2 = "accy.slice"(%b) <{start_indices = array<i64: 1, 0>, limit_indices = array<i64: 3, 3>, strides = array<i64: 1, 2>}> : (tensor<4x3xf32>) -> tensor<2x2xf32>
func.func @new_ops(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %d: tensor<?x3xf32>) -> tensor<6x3xf32> {
  %0 = accy.iota dim = 0 : tensor<4x3xi32>
  %1 = accy.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %2 = accy.slice %b [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>
  %3 = accy.concatenate %d, %a, dim = 0 : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  %4 = accy.slice %d [0:1, 2:3] : (tensor<?x3xf32>) -> tensor<1x1xf32>
  func.return %1 : tensor<6x3xf32>
}
