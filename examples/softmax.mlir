// A row softmax with dynamic rows: the batch dim is `?`, bound to one row count per call.
//   accy-opt examples/softmax.mlir -p 'accy-plan-arena{rows=64}' --accy-report arena
//   accy-run examples/softmax.mlir --random-inputs --rows 3 --print   # any row count
func.func @softmax(%x: tensor<?x1000xf32>) -> tensor<?x1000xf32> {
  %max = accy.reduce max %x, dims = [1] : (tensor<?x1000xf32>) -> tensor<?xf32>
  %max_b = accy.broadcast_in_dim %max, dims = [0] : (tensor<?xf32>) -> tensor<?x1000xf32>
  %shifted = accy.subtract %x, %max_b : tensor<?x1000xf32>
  %e = accy.exponential %shifted : tensor<?x1000xf32>
  %sum = accy.reduce add %e, dims = [1] : (tensor<?x1000xf32>) -> tensor<?xf32>
  %sum_b = accy.broadcast_in_dim %sum, dims = [0] : (tensor<?xf32>) -> tensor<?x1000xf32>
  %p = accy.divide %e, %sum_b : tensor<?x1000xf32>
  func.return %p : tensor<?x1000xf32>
}
