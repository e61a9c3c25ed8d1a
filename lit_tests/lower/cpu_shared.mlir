// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s

// Two layers of the same structure: each kernel kind is lowered once, into a private
// function LLVM may not inline, called at each use with that use's buffers
// (passes/lower/cpu_shared.py). The host function keeps only the calls.
func.func @layers(%x: tensor<64x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %a = accy.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = accy.tanh %a : tensor<64x64xf32>
  %c = accy.dot_general %b, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %d = accy.tanh %c : tensor<64x64xf32>
  func.return %d : tensor<64x64xf32>
}
// CHECK:       func.func private @[[K:accy_kernel_[0-9]+]](%{{.*}}: memref<64x64xf32>, %{{.*}}: memref<64x64xf32>, %{{.*}}: memref<64x64xf32>) attributes {llvm.no_inline} {
// CHECK:         vector.fma
// CHECK:         func.return
// CHECK:       func.func @accy_fn_layers(
// CHECK-NOT:     scf.for
// CHECK:         func.call @[[K]](%x, %w1, %[[T:[^)]*]]) : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
// CHECK-NEXT:    func.call @[[K]](%[[T]], %w2, %out0) : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
