// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @broadcast(%s: tensor<3xf32>, %one: tensor<1x3xi32>, %d: tensor<?xf16>, %z: tensor<f32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    %0 = accy.broadcast_in_dim %s, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = accy.broadcast_in_dim %one, dims = [0, 2] : (tensor<1x3xi32>) -> tensor<4x5x3xi32>
// CHECK-NEXT:    %2 = accy.broadcast_in_dim %d, dims = [0] : (tensor<?xf16>) -> tensor<?x8xf16>
// CHECK-NEXT:    %3 = accy.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %4 = accy.broadcast_in_dim %s, dims = [0] : (tensor<3xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "broadcast"
// GENERIC:         %0 = "accy.broadcast_in_dim"(%s) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf32>) -> tensor<2x3xf32>
// GENERIC-NEXT:    %1 = "accy.broadcast_in_dim"(%one) <{broadcast_dimensions = array<i64: 0, 2>}> : (tensor<1x3xi32>) -> tensor<4x5x3xi32>
// GENERIC:         %3 = "accy.broadcast_in_dim"(%z) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x2xf32>
func.func @broadcast(%s: tensor<3xf32>, %one: tensor<1x3xi32>, %d: tensor<?xf16>, %z: tensor<f32>) -> tensor<2x3xf32> {
  %0 = accy.broadcast_in_dim %s, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = accy.broadcast_in_dim %one, dims = [0, 2] : (tensor<1x3xi32>) -> tensor<4x5x3xi32>
  %2 = accy.broadcast_in_dim %d, dims = [0] : (tensor<?xf16>) -> tensor<?x8xf16>
  %3 = accy.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
  %4 = accy.broadcast_in_dim %s, dims = [0] : (tensor<3xf32>) -> tensor<?x4xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @reshape(%x: tensor<2x3xf32>, %i: tensor<4xi64>, %d: tensor<?x3xbf16>) -> tensor<6xf32> {
// CHECK-NEXT:    %0 = accy.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %1 = accy.reshape %x : (tensor<2x3xf32>) -> tensor<3x1x2xf32>
// CHECK-NEXT:    %2 = accy.reshape %i : (tensor<4xi64>) -> tensor<2x2xi64>
// CHECK-NEXT:    %3 = accy.reshape %d : (tensor<?x3xbf16>) -> tensor<?xbf16>
// CHECK-NEXT:    %4 = accy.reshape %x : (tensor<2x3xf32>) -> tensor<?x2xf32>
// CHECK-NEXT:    func.return %0 : tensor<6xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "reshape"
// GENERIC:         %0 = "accy.reshape"(%x) : (tensor<2x3xf32>) -> tensor<6xf32>
// GENERIC:         %3 = "accy.reshape"(%d) : (tensor<?x3xbf16>) -> tensor<?xbf16>
func.func @reshape(%x: tensor<2x3xf32>, %i: tensor<4xi64>, %d: tensor<?x3xbf16>) -> tensor<6xf32> {
  %0 = accy.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
  %1 = accy.reshape %x : (tensor<2x3xf32>) -> tensor<3x1x2xf32>
  %2 = accy.reshape %i : (tensor<4xi64>) -> tensor<2x2xi64>
  %3 = accy.reshape %d : (tensor<?x3xbf16>) -> tensor<?xbf16>
  %4 = accy.reshape %x : (tensor<2x3xf32>) -> tensor<?x2xf32>
  func.return %0 : tensor<6xf32>
}

// CHECK-LABEL: func.func @transpose(%x: tensor<2x3xf32>, %t: tensor<2x3x4xi32>, %d: tensor<?x5xf16>) -> tensor<3x2xf32> {
// CHECK-NEXT:    %0 = accy.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %1 = accy.transpose %t, dims = [2, 0, 1] : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
// CHECK-NEXT:    %2 = accy.transpose %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = accy.transpose %d, dims = [1, 0] : (tensor<?x5xf16>) -> tensor<5x?xf16>
// CHECK-NEXT:    func.return %0 : tensor<3x2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "transpose"
// GENERIC:         %0 = "accy.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
// GENERIC-NEXT:    %1 = "accy.transpose"(%t) <{permutation = array<i64: 2, 0, 1>}> : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
func.func @transpose(%x: tensor<2x3xf32>, %t: tensor<2x3x4xi32>, %d: tensor<?x5xf16>) -> tensor<3x2xf32> {
  %0 = accy.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = accy.transpose %t, dims = [2, 0, 1] : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
  %2 = accy.transpose %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = accy.transpose %d, dims = [1, 0] : (tensor<?x5xf16>) -> tensor<5x?xf16>
  func.return %0 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @reverse_pad(%x: tensor<2x3xf32>, %v: tensor<f32>, %d: tensor<?x3xi32>, %w: tensor<i32>) -> tensor<3x6xf32> {
// CHECK-NEXT:    %0 = accy.reverse %x, dims = [0, 1] : tensor<2x3xf32>
// CHECK-NEXT:    %1 = accy.reverse %d, dims = [] : tensor<?x3xi32>
// CHECK-NEXT:    %2 = accy.pad %0, %v, low = [1, 0], high = [0, -1], interior = [0, 2] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x6xf32>
// CHECK-NEXT:    %3 = accy.pad %1, %w, low = [0, 1], high = [0, 1], interior = [0, 0] : (tensor<?x3xi32>, tensor<i32>) -> tensor<?x5xi32>
// CHECK-NEXT:    func.return %2 : tensor<3x6xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "reverse_pad"
// GENERIC:         %0 = "accy.reverse"(%x) <{dimensions = array<i64: 0, 1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:         %2 = "accy.pad"(%0, %v) <{low = array<i64: 1, 0>, high = array<i64: 0, -1>, interior = array<i64: 0, 2>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x6xf32>
func.func @reverse_pad(%x: tensor<2x3xf32>, %v: tensor<f32>, %d: tensor<?x3xi32>, %w: tensor<i32>) -> tensor<3x6xf32> {
  %0 = accy.reverse %x, dims = [0, 1] : tensor<2x3xf32>
  %1 = accy.reverse %d, dims = [] : tensor<?x3xi32>
  %2 = accy.pad %0, %v, low = [1, 0], high = [0, -1], interior = [0, 2] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x6xf32>
  %3 = accy.pad %1, %w, low = [0, 1], high = [0, 1], interior = [0, 0] : (tensor<?x3xi32>, tensor<i32>) -> tensor<?x5xi32>
  func.return %2 : tensor<3x6xf32>
}

// CHECK-LABEL: func.func @dynamic_slice(%x: tensor<4x3xf32>, %i: tensor<i64>, %j: tensor<i32>) -> tensor<2x2xf32> {
// CHECK-NEXT:    %0 = accy.dynamic_slice %x[%i, %j], sizes = [2, 2] : (tensor<4x3xf32>, tensor<i64>, tensor<i32>) -> tensor<2x2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "dynamic_slice"
// GENERIC:         %0 = "accy.dynamic_slice"(%x, %i, %j) <{slice_sizes = array<i64: 2, 2>}> : (tensor<4x3xf32>, tensor<i64>, tensor<i32>) -> tensor<2x2xf32>
func.func @dynamic_slice(%x: tensor<4x3xf32>, %i: tensor<i64>, %j: tensor<i32>) -> tensor<2x2xf32> {
  %0 = accy.dynamic_slice %x[%i, %j], sizes = [2, 2] : (tensor<4x3xf32>, tensor<i64>, tensor<i32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @dynamic_update_slice(%x: tensor<4x4xf32>, %u: tensor<2x3xf32>, %i: tensor<i64>, %j: tensor<i32>) -> tensor<4x4xf32> {
// CHECK-NEXT:    %0 = accy.dynamic_update_slice %x, %u[%i, %j] : (tensor<4x4xf32>, tensor<2x3xf32>, tensor<i64>, tensor<i32>) -> tensor<4x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "dynamic_update_slice"
// GENERIC:         %0 = "accy.dynamic_update_slice"(%x, %u, %i, %j) : (tensor<4x4xf32>, tensor<2x3xf32>, tensor<i64>, tensor<i32>) -> tensor<4x4xf32>
func.func @dynamic_update_slice(%x: tensor<4x4xf32>, %u: tensor<2x3xf32>, %i: tensor<i64>, %j: tensor<i32>) -> tensor<4x4xf32> {
  %0 = accy.dynamic_update_slice %x, %u[%i, %j] : (tensor<4x4xf32>, tensor<2x3xf32>, tensor<i64>, tensor<i32>) -> tensor<4x4xf32>
  func.return %0 : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @gather(%table: tensor<10x4xf32>, %ids: tensor<3x1xi32>) -> tensor<3x4xf32> {
// CHECK-NEXT:    %0 = accy.gather %table[%ids], offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "gather"
// GENERIC:         %0 = "accy.gather"(%table, %ids) <{offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1 : i64, slice_sizes = array<i64: 1, 4>}> : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
func.func @gather(%table: tensor<10x4xf32>, %ids: tensor<3x1xi32>) -> tensor<3x4xf32> {
  %0 = accy.gather %table[%ids], offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @bitwise(%a: tensor<4xi32>, %p: tensor<4xi1>) -> (tensor<4xi32>, tensor<4xi1>) {
// CHECK-NEXT:    %0 = accy.and %a, %a : tensor<4xi32>
// CHECK-NEXT:    %1 = accy.or %0, %a : tensor<4xi32>
// CHECK-NEXT:    %2 = accy.xor %1, %a : tensor<4xi32>
// CHECK-NEXT:    %3 = accy.not %p : tensor<4xi1>
func.func @bitwise(%a: tensor<4xi32>, %p: tensor<4xi1>) -> (tensor<4xi32>, tensor<4xi1>) {
  %0 = accy.and %a, %a : tensor<4xi32>
  %1 = accy.or %0, %a : tensor<4xi32>
  %2 = accy.xor %1, %a : tensor<4xi32>
  %3 = accy.not %p : tensor<4xi1>
  func.return %2, %3 : tensor<4xi32>, tensor<4xi1>
}

// CHECK-LABEL: func.func @scatter(%x: tensor<6x3xf32>, %ids: tensor<4x1xi32>, %u: tensor<4x3xf32>) -> tensor<6x3xf32> {
// CHECK-NEXT:    %0 = accy.scatter %x[%ids] updates(%u), update_window_dims = [1], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 unique_indices : (tensor<6x3xf32>), tensor<4x1xi32>, (tensor<4x3xf32>) -> (tensor<6x3xf32>) {
// CHECK-NEXT:    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
// CHECK-NEXT:      %m = accy.maximum %a, %b : tensor<f32>
// CHECK-NEXT:      accy.yield %m : tensor<f32>
// CHECK-NEXT:    }
// GENERIC-LABEL: "func.func"() <{sym_name = "scatter"
// GENERIC:         %0 = "accy.scatter"(%x, %ids, %u) <{update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, input_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1 : i64, unique_indices, operandSegmentSizes = array<i32: 1, 1, 1>}> ({
func.func @scatter(%x: tensor<6x3xf32>, %ids: tensor<4x1xi32>, %u: tensor<4x3xf32>) -> tensor<6x3xf32> {
  %0 = accy.scatter %x[%ids] updates(%u), update_window_dims = [1], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 unique_indices : (tensor<6x3xf32>), tensor<4x1xi32>, (tensor<4x3xf32>) -> (tensor<6x3xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = accy.maximum %a, %b : tensor<f32>
    accy.yield %m : tensor<f32>
  }
  func.return %0 : tensor<6x3xf32>
}

// CHECK-LABEL: func.func @scatter_two(%x: tensor<6xf32>, %y: tensor<6xi32>, %ids: tensor<4x1xi32>, %u: tensor<4xf32>, %v: tensor<4xi32>) -> (tensor<6xf32>, tensor<6xi32>) {
// CHECK-NEXT:    %0, %1 = accy.scatter %x, %y[%ids] updates(%u, %v), update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<6xf32>, tensor<6xi32>), tensor<4x1xi32>, (tensor<4xf32>, tensor<4xi32>) -> (tensor<6xf32>, tensor<6xi32>) {
// CHECK-NEXT:    ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
func.func @scatter_two(%x: tensor<6xf32>, %y: tensor<6xi32>, %ids: tensor<4x1xi32>, %u: tensor<4xf32>, %v: tensor<4xi32>) -> (tensor<6xf32>, tensor<6xi32>) {
  %0, %1 = accy.scatter %x, %y[%ids] updates(%u, %v), update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<6xf32>, tensor<6xi32>), tensor<4x1xi32>, (tensor<4xf32>, tensor<4xi32>) -> (tensor<6xf32>, tensor<6xi32>) {
  ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
    %s = accy.add %a, %b : tensor<f32>
    %t = accy.add %ai, %bi : tensor<i32>
    accy.yield %s, %t : tensor<f32>, tensor<i32>
  }
  func.return %0, %1 : tensor<6xf32>, tensor<6xi32>
}
