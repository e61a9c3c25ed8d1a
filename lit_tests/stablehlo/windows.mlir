// RUN: accy-opt --import-stablehlo %s | filecheck %s

// A grouped NCHW/OIHW convolution, a 2x2 max pool, running sums along either dim
// (cumsum as JAX lowers it, and a reversed one: accy.scan, rounded every step in bf16)
// and the pool's gradient (select_and_scatter).
// CHECK-LABEL: func.func @main(%arg0: tensor<2x4x8x8xf32>, %arg1: tensor<6x2x3x3xf32>, %arg2: tensor<3x5xbf16>, %arg3: tensor<2x6x4x4xf32>) -> (tensor<2x6x8x8xf32>, tensor<2x4x4x4xf32>, tensor<3x5xbf16>, tensor<3x5xbf16>, tensor<2x4x8x8xf32>) {
// CHECK-NEXT:    %0 = accy.convolution %arg0, %arg1, lhs_dims = [0, 1, 2, 3], rhs_dims = [1, 0, 2, 3], result_dims = [0, 1, 2, 3], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 2, batch_groups = 1 : (tensor<2x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x8x8xf32>
// CHECK-NEXT:    %1 = accy.constant dense<0xff800000> : tensor<f32>
// CHECK-NEXT:    %2 = accy.reduce_window(%arg0 : tensor<2x4x8x8xf32>) init(%1 : tensor<f32>), window = [1, 1, 2, 2], strides = [1, 1, 2, 2], base_dilations = [1, 1, 1, 1], window_dilations = [1, 1, 1, 1], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0, 0] -> (tensor<2x4x4x4xf32>) {
// CHECK-NEXT:    ^bb0(%3: tensor<f32>, %4: tensor<f32>):
// CHECK-NEXT:    %5 = accy.maximum %3, %4 : tensor<f32>
// CHECK-NEXT:    accy.yield %5 : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %6 = accy.constant dense<0.000000e+00> : tensor<bf16>
// CHECK-NEXT:    %7 = accy.broadcast_in_dim %6, dims = [] : (tensor<bf16>) -> tensor<3x5xbf16>
// CHECK-NEXT:    %8 = accy.scan add %arg2, %7, dim = 1 rounded : tensor<3x5xbf16>
// CHECK-NEXT:    %9 = accy.reverse %arg2, dims = [0] : tensor<3x5xbf16>
// CHECK-NEXT:    %10 = accy.broadcast_in_dim %6, dims = [] : (tensor<bf16>) -> tensor<3x5xbf16>
// CHECK-NEXT:    %11 = accy.scan add %9, %10, dim = 0 rounded : tensor<3x5xbf16>
// CHECK-NEXT:    %12 = accy.reverse %11, dims = [0] : tensor<3x5xbf16>
// CHECK-NEXT:    %13 = accy.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %14 = accy.select_and_scatter %arg0, %2, %13, window = [1, 1, 2, 2], strides = [1, 1, 2, 2], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0, 0] : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x4x8x8xf32> {
// CHECK-NEXT:    ^bb0(%15: tensor<f32>, %16: tensor<f32>):
// CHECK-NEXT:    %17 = accy.compare GE, %15, %16 : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:    accy.yield %17 : tensor<i1>
// CHECK-NEXT:    } {
// CHECK-NEXT:    ^bb0(%18: tensor<f32>, %19: tensor<f32>):
// CHECK-NEXT:    %20 = accy.add %18, %19 : tensor<f32>
// CHECK-NEXT:    accy.yield %20 : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %0, %2, %8, %12, %14 : tensor<2x6x8x8xf32>, tensor<2x4x4x4xf32>, tensor<3x5xbf16>, tensor<3x5xbf16>, tensor<2x4x8x8xf32>
// CHECK-NEXT:    }
func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %c: tensor<3x5xbf16>, %g: tensor<2x6x4x4xf32>) -> (tensor<2x6x8x8xf32>, tensor<2x4x4x4xf32>, tensor<3x5xbf16>, tensor<3x5xbf16>, tensor<2x4x8x8xf32>) {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x8x8xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = "stablehlo.reduce_window"(%x, %ninf) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<bf16>
  %2 = "stablehlo.reduce_window"(%c, %zero) <{padding = dense<[[0, 0], [4, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 5>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %s = stablehlo.add %a, %b : tensor<bf16>
    stablehlo.return %s : tensor<bf16>
  }) : (tensor<3x5xbf16>, tensor<bf16>) -> tensor<3x5xbf16>
  %3 = "stablehlo.reduce_window"(%c, %zero) <{padding = dense<[[0, 2], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 3, 1>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %s = stablehlo.add %a, %b : tensor<bf16>
    stablehlo.return %s : tensor<bf16>
  }) : (tensor<3x5xbf16>, tensor<bf16>) -> tensor<3x5xbf16>
  %fzero = stablehlo.constant dense<0.0> : tensor<f32>
  %4 = "stablehlo.select_and_scatter"(%x, %1, %fzero) <{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  return %0, %1, %2, %3, %4 : tensor<2x6x8x8xf32>, tensor<2x4x4x4xf32>, tensor<3x5xbf16>, tensor<3x5xbf16>, tensor<2x4x8x8xf32>
}
