// RUN: accy-opt --import-stablehlo %s | filecheck %s

// CHECK-LABEL: func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<4x3xf32>)
// CHECK-NEXT:    %0 = accy.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = accy.reshape %arg1 : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %2 = accy.transpose %arg1, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %3 = accy.iota dim = 1 : tensor<4x3xi32>
// CHECK-NEXT:    %4 = accy.concatenate %arg1, %arg2, %0, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT:    %5 = accy.slice %arg2 [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    func.return %1, %2, %3, %4, %5
func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<4x3xf32>) -> (tensor<6xf32>, tensor<3x2xf32>, tensor<4x3xi32>, tensor<8x3xf32>, tensor<2x2xf32>) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.reshape %arg1 : (tensor<2x3xf32>) -> tensor<6xf32>
  %2 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = stablehlo.iota dim = 1 : tensor<4x3xi32>
  %4 = stablehlo.concatenate %arg1, %arg2, %0, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<8x3xf32>
  %5 = stablehlo.slice %arg2 [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>
  return %1, %2, %3, %4, %5 : tensor<6xf32>, tensor<3x2xf32>, tensor<4x3xi32>, tensor<8x3xf32>, tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @reverse_pad(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>)
// CHECK-NEXT:    %0 = accy.reverse %arg0, dims = [1] : tensor<2x3xf32>
// CHECK-NEXT:    %1 = accy.pad %0, %arg1, low = [0, -2], high = [1, -3], interior = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x0xf32>
func.func @reverse_pad(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> tensor<3x0xf32> {
  %0 = stablehlo.reverse %arg0, dims = [1] : tensor<2x3xf32>
  %1 = stablehlo.pad %0, %arg1, low = [0, -2], high = [1, -3], interior = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x0xf32>
  return %1 : tensor<3x0xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_slice(%arg0: tensor<5x3xf32>, %arg1: tensor<i64>, %arg2: tensor<i64>)
// CHECK-NEXT:    %0 = accy.dynamic_slice %arg0[%arg1, %arg2], sizes = [2, 3] : (tensor<5x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x3xf32>
func.func @dynamic_slice(%arg0: tensor<5x3xf32>, %arg1: tensor<i64>, %arg2: tensor<i64>) -> tensor<2x3xf32> {
  %0 = stablehlo.dynamic_slice %arg0, %arg1, %arg2, sizes = [2, 3] : (tensor<5x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_update_slice(%arg0: tensor<5x3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<i64>, %arg3: tensor<i64>)
// CHECK-NEXT:    %0 = accy.dynamic_update_slice %arg0, %arg1[%arg2, %arg3] : (tensor<5x3xf32>, tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<5x3xf32>
func.func @dynamic_update_slice(%arg0: tensor<5x3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<i64>, %arg3: tensor<i64>) -> tensor<5x3xf32> {
  %0 = stablehlo.dynamic_update_slice %arg0, %arg1, %arg2, %arg3 : (tensor<5x3xf32>, tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// An embedding lookup as JAX emits `table[ids]`; `indices_are_sorted` is a hint.
// CHECK-LABEL: func.func @gather(%arg0: tensor<10x4xf32>, %arg1: tensor<3x1xi32>)
// CHECK-NEXT:    %0 = accy.gather %arg0[%arg1], offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
func.func @gather(%arg0: tensor<10x4xf32>, %arg1: tensor<3x1xi32>) -> tensor<3x4xf32> {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @all_true(%arg0: tensor<4xi1>)
// CHECK-NEXT:    %0 = accy.reduce min %arg0, dims = [0] : (tensor<4xi1>) -> tensor<i1>
// CHECK-NEXT:    %1 = accy.not %0 : tensor<i1>
func.func @all_true(%arg0: tensor<4xi1>) -> tensor<i1> {
  %c = stablehlo.constant dense<true> : tensor<i1>
  %0 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.and across dimensions = [0] : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
  %1 = stablehlo.not %0 : tensor<i1>
  return %1 : tensor<i1>
}

// -----

// `segment_sum` as JAX emits it: a scatter-add of rows; `indices_are_sorted` is a hint,
// `unique_indices` is kept.
// CHECK-LABEL: func.func @segment_sum(%arg0: tensor<5x2xf32>, %arg1: tensor<5x1xi32>)
// CHECK:         %{{.*}} = accy.scatter %{{.*}}[%arg1] updates(%arg0), update_window_dims = [1], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 unique_indices : (tensor<3x2xf32>), tensor<5x1xi32>, (tensor<5x2xf32>) -> (tensor<3x2xf32>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<f32>, %{{.*}}: tensor<f32>):
// CHECK-NEXT:      %{{.*}} = accy.add %{{.*}}, %{{.*}} : tensor<f32>
// CHECK-NEXT:      accy.yield %{{.*}} : tensor<f32>
func.func @segment_sum(%arg0: tensor<5x2xf32>, %arg1: tensor<5x1xi32>) -> tensor<3x2xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<3x2xf32>
  %0 = "stablehlo.scatter"(%zero, %arg1, %arg0) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<3x2xf32>, tensor<5x1xi32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// A pad that pads nothing and a slice of everything are their operand (JAX's gradient of
// max pooling writes both around its select_and_scatter): no copy is planned.
// CHECK-LABEL: func.func @identities(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %0 = accy.exponential %arg0 : tensor<4x6xf32>
// CHECK-NEXT:    func.return %0 : tensor<4x6xf32>
func.func @identities(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %x, %z, low = [0, 0], high = [0, 0], interior = [0, 0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %e = stablehlo.exponential %p : tensor<4x6xf32>
  %s = stablehlo.slice %e [0:4, 0:6] : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}
