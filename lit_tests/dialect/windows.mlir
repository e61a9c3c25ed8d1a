// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Windows and convolutions round-trip in their custom and generic forms: a 2x2 max pool,
// its gradient, a 3x3 "SAME" NHWC/HWIO convolution, a strided, lhs-dilated, reversed i8
// convolution into i32, and a running bf16 sum rounded every step.
// CHECK-LABEL: func.func @windows(%x: tensor<4x16x16x8xf32>, %w: tensor<3x3x8x16xf32>, %m: tensor<f32>, %s: tensor<4x8x8x8xf32>, %c: tensor<2x9xbf16>, %i: tensor<1x4x4x1xi8>, %k: tensor<3x3x1x1xi8>) -> tensor<4x8x8x8xf32> {
// CHECK-NEXT:  %0 = accy.reduce_window(%x : tensor<4x16x16x8xf32>) init(%m : tensor<f32>), window = [1, 2, 2, 1], strides = [1, 2, 2, 1], base_dilations = [1, 1, 1, 1], window_dilations = [1, 1, 1, 1], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0, 0] -> (tensor<4x8x8x8xf32>) {
// CHECK-NEXT:  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
// CHECK-NEXT:  %r = accy.maximum %a, %b : tensor<f32>
// CHECK-NEXT:  accy.yield %r : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %1 = accy.select_and_scatter %x, %s, %m, window = [1, 2, 2, 1], strides = [1, 2, 2, 1], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0, 0] : (tensor<4x16x16x8xf32>, tensor<4x8x8x8xf32>, tensor<f32>) -> tensor<4x16x16x8xf32> {
// CHECK-NEXT:  ^bb0(%a_1: tensor<f32>, %b_1: tensor<f32>):
// CHECK-NEXT:  %ge = accy.compare GE, %a_1, %b_1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:  accy.yield %ge : tensor<i1>
// CHECK-NEXT:  } {
// CHECK-NEXT:  ^bb0(%a_2: tensor<f32>, %b_2: tensor<f32>):
// CHECK-NEXT:  %sum = accy.add %a_2, %b_2 : tensor<f32>
// CHECK-NEXT:  accy.yield %sum : tensor<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %2 = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<4x16x16x8xf32>, tensor<3x3x8x16xf32>) -> tensor<4x16x16x16xf32>
// CHECK-NEXT:  %3 = accy.convolution %i, %k, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [4, 4], padding_low = [0, 0], padding_high = [0, 0], lhs_dilation = [2, 2], rhs_dilation = [1, 1], reversal = [1, 0], feature_groups = 1, batch_groups = 1 : (tensor<1x4x4x1xi8>, tensor<3x3x1x1xi8>) -> tensor<1x2x2x1xi32>
// CHECK-NEXT:  %4 = accy.scan add %c, %c, dim = 1 rounded : tensor<2x9xbf16>
// CHECK-NEXT:  func.return %0 : tensor<4x8x8x8xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "windows"
// GENERIC:       %0 = "accy.reduce_window"(%x, %m) <{window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>, base_dilations = array<i64: 1, 1, 1, 1>, window_dilations = array<i64: 1, 1, 1, 1>, padding_low = array<i64: 0, 0, 0, 0>, padding_high = array<i64: 0, 0, 0, 0>, operandSegmentSizes = array<i32: 1, 1>}>
// GENERIC:       %1 = "accy.select_and_scatter"(%x, %s, %m) <{window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding_low = array<i64: 0, 0, 0, 0>, padding_high = array<i64: 0, 0, 0, 0>}>
// GENERIC:       %2 = "accy.convolution"(%x, %w) <{lhs_dims = array<i64: 0, 3, 1, 2>, rhs_dims = array<i64: 2, 3, 0, 1>, result_dims = array<i64: 0, 3, 1, 2>, window_strides = array<i64: 1, 1>, padding_low = array<i64: 1, 1>, padding_high = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, window_reversal = array<i64: 0, 0>, feature_group_count = 1 : i64, batch_group_count = 1 : i64}> : (tensor<4x16x16x8xf32>, tensor<3x3x8x16xf32>) -> tensor<4x16x16x16xf32>
// GENERIC:       %3 = "accy.convolution"(%i, %k) <{lhs_dims = array<i64: 0, 3, 1, 2>, rhs_dims = array<i64: 2, 3, 0, 1>, result_dims = array<i64: 0, 3, 1, 2>, window_strides = array<i64: 4, 4>, padding_low = array<i64: 0, 0>, padding_high = array<i64: 0, 0>, lhs_dilation = array<i64: 2, 2>, rhs_dilation = array<i64: 1, 1>, window_reversal = array<i64: 1, 0>, feature_group_count = 1 : i64, batch_group_count = 1 : i64}> : (tensor<1x4x4x1xi8>, tensor<3x3x1x1xi8>) -> tensor<1x2x2x1xi32>
// GENERIC:       %4 = "accy.scan"(%c, %c) <{kind = #accy<combiner add>, dimension = 1 : i64, rounded}> : (tensor<2x9xbf16>, tensor<2x9xbf16>) -> tensor<2x9xbf16>
func.func @windows(%x: tensor<4x16x16x8xf32>, %w: tensor<3x3x8x16xf32>, %m: tensor<f32>, %s: tensor<4x8x8x8xf32>, %c: tensor<2x9xbf16>, %i: tensor<1x4x4x1xi8>, %k: tensor<3x3x1x1xi8>) -> tensor<4x8x8x8xf32> {
  %0 = accy.reduce_window (%x : tensor<4x16x16x8xf32>) init (%m : tensor<f32>), window = [1, 2, 2, 1], strides = [1, 2, 2, 1], base_dilations = [1, 1, 1, 1], window_dilations = [1, 1, 1, 1], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0, 0] -> (tensor<4x8x8x8xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = accy.maximum %a, %b : tensor<f32>
    accy.yield %r : tensor<f32>
  }
  %1 = accy.select_and_scatter %x, %s, %m, window = [1, 2, 2, 1], strides = [1, 2, 2, 1], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0, 0] : (tensor<4x16x16x8xf32>, tensor<4x8x8x8xf32>, tensor<f32>) -> tensor<4x16x16x8xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = accy.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %ge : tensor<i1>
  } {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = accy.add %a, %b : tensor<f32>
    accy.yield %sum : tensor<f32>
  }
  %2 = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<4x16x16x8xf32>, tensor<3x3x8x16xf32>) -> tensor<4x16x16x16xf32>
  %3 = accy.convolution %i, %k, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [4, 4], padding_low = [0, 0], padding_high = [0, 0], lhs_dilation = [2, 2], rhs_dilation = [1, 1], reversal = [1, 0], feature_groups = 1, batch_groups = 1 : (tensor<1x4x4x1xi8>, tensor<3x3x1x1xi8>) -> tensor<1x2x2x1xi32>
  %4 = accy.scan add %c, %c, dim = 1 rounded : tensor<2x9xbf16>
  func.return %0 : tensor<4x8x8x8xf32>
}
