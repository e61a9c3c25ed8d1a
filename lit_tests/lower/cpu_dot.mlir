// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu cpu-features=avx512_bf16}' | filecheck %s --check-prefix=PAIRS
// RUN: accy-opt %s -p 'accy-lower{target=cpu cpu-features=avx512_bf16}' | %mlir-check | filecheck %s --check-prefix=LLVM

// A bf16 product: for any x86-64 CPU, its operands are extended to f32 as they are loaded
// and summed by FMAs; for a CPU with AVX512_BF16 (`cpu-features=avx512_bf16`, which
// accy.compile passes where the machine has it) pairs of k positions are summed by
// `x86.avx512.dot` (vdpbf16ps), the lhs pair broadcast as one 32-bit word, unless a check
// of both operands at the call finds a subnormal value (which vdpbf16ps reads as zero):
// then the FMA tiles run. bf16 buffers are i16 in CPU code (`passes/lower/bf16_storage.py`),
// each load bitcast to bf16.
// CHECK-LABEL: func.func @accy_fn_bf16
// CHECK-NOT:     x86.avx512.dot
// CHECK:         vector.fma
// PAIRS-LABEL: func.func @accy_fn_bf16
// PAIRS:         memref.collapse_shape %a
// PAIRS:         vector.reduction <minui>
// PAIRS:         memref.collapse_shape %b
// PAIRS:         %[[SUBNORMAL:.*]] = arith.cmpi ult
// PAIRS:         scf.if %[[SUBNORMAL]] {
// PAIRS-NOT:       x86.avx512.dot
// PAIRS:           vector.fma
// PAIRS:         } else {
// PAIRS-NOT:       vector.fma
// PAIRS:           vector.load %{{.*}} : memref<8x32xi16>, vector<2xi16>
// PAIRS:           "x86.avx512.dot"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// LLVM:        llvm.x86.avx512bf16.dpbf16ps.512
func.func @bf16(%a: tensor<8x32xbf16>, %b: tensor<32x40xbf16>) -> tensor<8x40xbf16> {
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x32xbf16>, tensor<32x40xbf16>) -> tensor<8x40xbf16>
  return %r : tensor<8x40xbf16>
}

// A product with an epilogue (bias, ReLU): each register tile's sums are staged in a
// stack buffer released after the tile, and each element's epilogue value is stored
// into the result, read from nowhere else.
// CHECK-LABEL: func.func @accy_fn_dense
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

// `A . B^T` (the rows form): each of a tile's 4 x 4 accumulators holds 16 lanes of
// partial sums along k; a tree of shuffles and adds sums them all at once (each level
// adds the low and high halves of every lane group of two vectors: 16, 8, 4, 2, 1 lanes
// per accumulator), leaving the tile's 16 sums in one vector, a row's 4 stored together.
// CHECK-LABEL: func.func @accy_fn_rows
// CHECK-COUNT-16: vector.fma
// CHECK-NOT:     vector.reduction
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
// CHECK:         arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : vector<16xf32>
// CHECK:         %[[L:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// CHECK:         %[[H:.*]] = vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]
// CHECK:         %[[SUMS:.*]] = arith.addf %[[L]], %[[H]] fastmath<reassoc> : vector<16xf32>
// CHECK:         %[[ROW0:.*]] = vector.shuffle %[[SUMS]], %[[SUMS]] [0, 1, 2, 3]
// CHECK:         %[[ROW3:.*]] = vector.shuffle %[[SUMS]], %[[SUMS]] [12, 13, 14, 15]
// CHECK:         vector.store %[[ROW0]], %out0
// CHECK-COUNT-2: vector.store
// CHECK:         vector.store %[[ROW3]], %out0
func.func @rows(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8x8xf32> {
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
