// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu cpu-features=avx512_bf16}' | filecheck %s --check-prefix=PAIRS
// RUN: accy-opt %s -p 'accy-lower{target=cpu cpu-features=avx512_bf16}' | %mlir-check | filecheck %s --check-prefix=LLVM

// A bf16 product: for any x86-64 CPU, its operands are extended to f32 as they are loaded
// and summed by FMAs; for a CPU with AVX512_BF16 (`cpu-features=avx512_bf16`, which
// accy.compile passes where the machine has it) pairs of k positions are summed by
// `x86.avx512.dot` (vdpbf16ps), the lhs pair broadcast as one 32-bit word.
// CHECK-LABEL: func.func @bf16
// CHECK-NOT:     x86.avx512.dot
// CHECK:         vector.fma
// PAIRS-LABEL: func.func @bf16
// PAIRS-NOT:     vector.fma
// PAIRS:         vector.load %{{.*}} : memref<8x32xbf16>, vector<2xbf16>
// PAIRS:         "x86.avx512.dot"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// LLVM:        llvm.x86.avx512bf16.dpbf16ps.512
func.func @bf16(%a: tensor<8x32xbf16>, %b: tensor<32x40xbf16>) -> tensor<8x40xbf16> {
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x32xbf16>, tensor<32x40xbf16>) -> tensor<8x40xbf16>
  return %r : tensor<8x40xbf16>
}

// A product with an epilogue (bias, ReLU): each register tile's sums are staged in a
// stack buffer released after the tile, and each element's epilogue value is stored
// into the result, read from nowhere else.
// CHECK-LABEL: func.func @dense
// CHECK:         vector.fma
// CHECK:         %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT:    %[[STAGE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<8x32xf32>
// CHECK:         vector.store %{{.*}}, %[[STAGE]]
// CHECK:         memref.load %[[STAGE]]
// CHECK:         arith.addf
// CHECK:         arith.maximumf
// CHECK:         memref.store %{{.*}}, %out0
// CHECK:         llvm.intr.stackrestore %[[SP]] : !llvm.ptr
func.func @dense(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<16x64xf32>
  %z = accy.add %y, %bb : tensor<16x64xf32>
  %zero = accy.constant dense<0.0> : tensor<16x64xf32>
  %r = accy.maximum %z, %zero : tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}
