// RUN: rm -f %t.png
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena' --accy-arena-plot=%t.png | filecheck %s
// RUN: %python -c "import sys; data = open(sys.argv[1], 'rb').read(); assert data[:8] == b'\x89PNG\r\n\x1a\n', data[:8]; assert len(data) > 1000, len(data)" %t.png

// --accy-arena-plot draws every function's arena (buffers as boxes over work items ×
// addresses) into a PNG; the program output is unchanged.

// CHECK: func.func @plot(
// CHECK-SAME: accy.arena_size = 768 : i64
func.func @plot(%a: tensor<4x3xf32>) -> tensor<3xf32> {
  %0 = accy.reduce add %a, dims = [1] : (tensor<4x3xf32>) -> tensor<4xf32>
  %1 = accy.reduce max %0, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %2 = accy.reduce add %a, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %b = accy.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %3 = accy.add %2, %b : tensor<3xf32>
  func.return %3 : tensor<3xf32>
}

func.func @loop(%x: tensor<3xf32>, %y: tensor<4x3xf32>) -> tensor<3xf32> {
  %o = accy.reduce add %y, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %r = accy.iterate 4 iter_args(%p = %x) : tensor<3xf32> {
    %t = accy.add %p, %o : tensor<3xf32>
    accy.yield %t : tensor<3xf32>
  }
  func.return %r : tensor<3xf32>
}
