// A row softmax of static shape: the plan tests' program (tests/plan).
func.func @softmax(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %m = accy.reduce max %x, dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
  %mb = accy.broadcast_in_dim %m, dims = [0] : (tensor<8xf32>) -> tensor<8x16xf32>
  %s = accy.subtract %x, %mb : tensor<8x16xf32>
  %e = accy.exponential %s : tensor<8x16xf32>
  %t = accy.reduce add %e, dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
  %tb = accy.broadcast_in_dim %t, dims = [0] : (tensor<8xf32>) -> tensor<8x16xf32>
  %p = accy.divide %e, %tb : tensor<8x16xf32>
  func.return %p : tensor<8x16xf32>
}
