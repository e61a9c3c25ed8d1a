// Layer normalization over the last dim of a 32 x 512 batch, with a learned scale and bias.
//   accy-opt examples/layernorm.mlir -p accy-plan-memory-spaces
//   accy-opt examples/layernorm.mlir -p accy-plan-arena --accy-arena-plot=layernorm.png
func.func @layernorm(%x: tensor<32x512xf32>, %gamma: tensor<512xf32>, %beta: tensor<512xf32>) -> tensor<32x512xf32> {
  %n = accy.constant dense<512.0> : tensor<32xf32>
  %eps = accy.constant dense<1.0e-5> : tensor<32xf32>
  %sum = accy.reduce add %x, dims = [1] : (tensor<32x512xf32>) -> tensor<32xf32>
  %mean = accy.divide %sum, %n : tensor<32xf32>
  %mean_b = accy.broadcast_in_dim %mean, dims = [0] : (tensor<32xf32>) -> tensor<32x512xf32>
  %centered = accy.subtract %x, %mean_b : tensor<32x512xf32>
  %squares = accy.multiply %centered, %centered : tensor<32x512xf32>
  %sum_sq = accy.reduce add %squares, dims = [1] : (tensor<32x512xf32>) -> tensor<32xf32>
  %var = accy.divide %sum_sq, %n : tensor<32xf32>
  %var_eps = accy.add %var, %eps : tensor<32xf32>
  %inv = accy.rsqrt %var_eps : tensor<32xf32>
  %inv_b = accy.broadcast_in_dim %inv, dims = [0] : (tensor<32xf32>) -> tensor<32x512xf32>
  %normed = accy.multiply %centered, %inv_b : tensor<32x512xf32>
  %gamma_b = accy.broadcast_in_dim %gamma, dims = [1] : (tensor<512xf32>) -> tensor<32x512xf32>
  %beta_b = accy.broadcast_in_dim %beta, dims = [1] : (tensor<512xf32>) -> tensor<32x512xf32>
  %scaled = accy.multiply %normed, %gamma_b : tensor<32x512xf32>
  %y = accy.add %scaled, %beta_b : tensor<32x512xf32>
  func.return %y : tensor<32x512xf32>
}
