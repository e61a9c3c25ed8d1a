// RUN: accy-opt %s -p 'accy-plan-arena{target=cpu check=true}' | filecheck %s
// RUN: accy-opt %s -p 'accy-plan-arena{target=cuda check=true}' | filecheck %s --check-prefix=CUDA

// A product without register tiles (two contracting dims: attention's output projection
// once its transpose is folded in) whose epilogue ends in its type accumulates in its
// output on the CPU, vectorized along it, then replaces each element by its epilogue's
// value: the output is zeroed before the epilogue reads the residual %t, so it does not
// take %t's buffer over, though %t dies there (`dot_layout.accumulates_in_output`; %t lies
// in the result's out-parameter, free until the transpose writes it). CUDA stores each sum
// once as its epilogue's value, so there the output takes %t over.

// CHECK-LABEL: func.func @project(
// CHECK:         %t = accy.transpose %x, dims = [0, 2, 1] {accy.arena = "in the out-parameter of slot 6 at byte 0 live [0, 1]"}
// CHECK:         %s = accy.add %z, %t {accy.arena = "offset 0 live [1, 2]"}
// CUDA-LABEL:  func.func @project(
// CUDA:          %s = accy.add %z, %t {accy.arena = "offset 0 live [1, 2] reuses slot 4"}
func.func @project(%a: tensor<2x4x16x8xf32>, %w: tensor<4x8x32xf32>, %b: tensor<32xf32>, %x: tensor<2x32x16xf32>) -> tensor<2x32x16xf32> {
  %t = accy.transpose %x, dims = [0, 2, 1] : (tensor<2x32x16xf32>) -> tensor<2x16x32xf32>
  %y = accy.dot_general %a, %w, batching_dims = [] x [], contracting_dims = [1, 3] x [0, 1] : (tensor<2x4x16x8xf32>, tensor<4x8x32xf32>) -> tensor<2x16x32xf32>
  %bb = accy.broadcast_in_dim %b, dims = [2] : (tensor<32xf32>) -> tensor<2x16x32xf32>
  %z = accy.add %y, %bb : tensor<2x16x32xf32>
  %s = accy.add %z, %t : tensor<2x16x32xf32>
  %o = accy.transpose %s, dims = [0, 2, 1] : (tensor<2x16x32xf32>) -> tensor<2x32x16xf32>
  func.return %o : tensor<2x32x16xf32>
}
