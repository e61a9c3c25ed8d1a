// RUN: accy-opt %s -p accy-plan-fusion | filecheck %s --check-prefix=FUSION
// RUN: accy-opt %s -p 'accy-plan-arena{target=cpu check=true}' | filecheck %s
// RUN: accy-opt %s -p 'accy-plan-arena{target=cuda check=true}' | filecheck %s --check-prefix=CUDA

// softmax(Q K^T) V is one `attention` work item (`fusion.attention_chain`): the scores
// product, the softmax's reductions, broadcasts and elementwise ops and the values product
// form one group rooted at the values product, so neither the scores nor the probabilities
// (2x4x8x8 f32, 2048 B each) get a buffer; the arena holds only the attention's output,
// which the output projection reads (flax's MultiHeadDotProductAttention: 3145728 B ->
// 1572864 B, XLA's temporaries).

// FUSION-LABEL: func.func @attend(
// FUSION-NEXT:    %s = accy.dot_general %q, %k, {{.*}} {accy.fusion = "group [[N:[0-9]+]] elided"}
// FUSION-NEXT:    %mx = accy.reduce max %s, {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %m1 = {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %mb = {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %z = accy.subtract {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %e = accy.exponential {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %sum = accy.reduce add {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %sb = {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %p = accy.divide {{.*}} {accy.fusion = "group [[N]] elided"}
// FUSION-NEXT:    %o = accy.dot_general %p, %v, {{.*}} {accy.fusion = "group [[N]] root"}
// FUSION-NEXT:    %y = accy.dot_general %o, %w, {{.*}} {accy.fusion = "group {{[0-9]+}} root"}

// CHECK-LABEL: func.func @attend(
// CHECK-SAME:    attributes {accy.arena_size = 4096 : i64}
// CHECK:         %o = accy.dot_general %p, %v, {{.*}} {accy.arena = "offset 0 live [0, 1]"}
// CHECK:         %y = accy.dot_general %o, %w, {{.*}} {accy.arena = "out-parameter live [1, 1]"}

// On the device the parameters are copied into the arena (q, k and v 4096 B each, w
// 16384 B): with the output, 32768 B, still no scores.
// CUDA-LABEL: func.func @attend(
// CUDA-SAME:    attributes {accy.arena_size = 32768 : i64}
func.func @attend(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>, %w: tensor<4x16x64xf32>) -> tensor<2x8x64xf32> {
  %s = accy.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3] : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x8xf32>
  %mx = accy.reduce max %s, dims = [3] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8xf32>
  %m1 = accy.broadcast_in_dim %mx, dims = [0, 1, 2] : (tensor<2x4x8xf32>) -> tensor<2x4x8x1xf32>
  %mb = accy.broadcast_in_dim %m1, dims = [0, 1, 2, 3] : (tensor<2x4x8x1xf32>) -> tensor<2x4x8x8xf32>
  %z = accy.subtract %s, %mb : tensor<2x4x8x8xf32>
  %e = accy.exponential %z : tensor<2x4x8x8xf32>
  %sum = accy.reduce add %e, dims = [3] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8xf32>
  %sb = accy.broadcast_in_dim %sum, dims = [0, 1, 2] : (tensor<2x4x8xf32>) -> tensor<2x4x8x8xf32>
  %p = accy.divide %e, %sb : tensor<2x4x8x8xf32>
  %o = accy.dot_general %p, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1] : (tensor<2x4x8x8xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %y = accy.dot_general %o, %w, batching_dims = [] x [], contracting_dims = [1, 3] x [0, 1] : (tensor<2x4x8x16xf32>, tensor<4x16x64xf32>) -> tensor<2x8x64xf32>
  func.return %y : tensor<2x8x64xf32>
}

// The probabilities are also a result: they must be stored, so nothing of the chain joins
// the values product (each reduction and the softmax's elementwise ops are kernels of
// their own).

// FUSION-LABEL: func.func @probabilities_returned(
// FUSION:         %s = accy.dot_general %q, %k, {{.*}} {accy.fusion = "group [[S:[0-9]+]] root"}
// FUSION:         %p = accy.divide {{.*}} {accy.fusion = "group [[P:[0-9]+]] root"}
// FUSION:         %o = accy.dot_general %p, %v, {{.*}} {accy.fusion = "group {{[0-9]+}} root"}
func.func @probabilities_returned(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>) {
  %s = accy.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3] : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x8xf32>
  %mx = accy.reduce max %s, dims = [3] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8xf32>
  %mb = accy.broadcast_in_dim %mx, dims = [0, 1, 2] : (tensor<2x4x8xf32>) -> tensor<2x4x8x8xf32>
  %z = accy.subtract %s, %mb : tensor<2x4x8x8xf32>
  %e = accy.exponential %z : tensor<2x4x8x8xf32>
  %sum = accy.reduce add %e, dims = [3] : (tensor<2x4x8x8xf32>) -> tensor<2x4x8xf32>
  %sb = accy.broadcast_in_dim %sum, dims = [0, 1, 2] : (tensor<2x4x8xf32>) -> tensor<2x4x8x8xf32>
  %p = accy.divide %e, %sb : tensor<2x4x8x8xf32>
  %o = accy.dot_general %p, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1] : (tensor<2x4x8x8xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  func.return %o, %p : tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>
}
