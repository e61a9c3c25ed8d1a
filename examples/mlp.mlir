// A two-layer perceptron on a batch of 8: x·W1 + b1, ReLU, ·W2 + b2, then a softmax.
//   accy-opt examples/mlp.mlir -p accy-plan-arena --accy-report arena
//   accy-run examples/mlp.mlir --random-inputs
func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x128xf32>, %b1: tensor<128xf32>,
               %w2: tensor<128x10xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %h = accy.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
  %bias1 = accy.broadcast_in_dim %b1, dims = [1] : (tensor<128xf32>) -> tensor<8x128xf32>
  %h1 = accy.add %h, %bias1 : tensor<8x128xf32>
  %zero = accy.constant dense<0.0> : tensor<8x128xf32>
  %relu = accy.maximum %h1, %zero : tensor<8x128xf32>
  %o = accy.dot_general %relu, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x128xf32>, tensor<128x10xf32>) -> tensor<8x10xf32>
  %bias2 = accy.broadcast_in_dim %b2, dims = [1] : (tensor<10xf32>) -> tensor<8x10xf32>
  %logits = accy.add %o, %bias2 : tensor<8x10xf32>
  %max = accy.reduce max %logits, dims = [1] : (tensor<8x10xf32>) -> tensor<8xf32>
  %max_b = accy.broadcast_in_dim %max, dims = [0] : (tensor<8xf32>) -> tensor<8x10xf32>
  %shifted = accy.subtract %logits, %max_b : tensor<8x10xf32>
  %e = accy.exponential %shifted : tensor<8x10xf32>
  %sum = accy.reduce add %e, dims = [1] : (tensor<8x10xf32>) -> tensor<8xf32>
  %sum_b = accy.broadcast_in_dim %sum, dims = [0] : (tensor<8xf32>) -> tensor<8x10xf32>
  %p = accy.divide %e, %sum_b : tensor<8x10xf32>
  func.return %p : tensor<8x10xf32>
}
