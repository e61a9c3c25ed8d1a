// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | %mlir-check > /dev/null
// RUN: accy-opt %s -p 'accy-lower{target=cuda}' | filecheck %s --check-prefix=CUDA

// An attention kernel on the CPU, packed form (cpu_kernels/attention.py): per head, on the
// stack, K transposed (16 x 32: two vectors of 16 keys), V (32 x 16) and the scores of a
// block of 4 queries (4 x 32), released after the head; the scores
// of the 4 queries (eight multiply-adds a step: 4 queries x 2 vectors of keys) and their
// output rows are sums of vector multiply-adds (a broadcast Q element or probability
// times a row of packed K or V). No scores reach memory outside
// the stack. The CUDA target launches one kernel, one thread per score row.

// CHECK-LABEL: func.func @accy_fn_attend(
// CHECK:         %[[SAVED:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT:    memref.alloca() {alignment = 64 : i64} : memref<16x32xf32>
// CHECK-NEXT:    memref.alloca() {alignment = 64 : i64} : memref<32x16xf32>
// CHECK-NEXT:    memref.alloca() {alignment = 64 : i64} : memref<4x32xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
// CHECK-COUNT-4: vector.fma {{.*}} : vector<16xf32>
// CHECK:         llvm.intr.stackrestore %[[SAVED]] : !llvm.ptr

// CUDA-LABEL:  func.func @accy_fn_attend(
// CUDA:          "gpu.launch_func"({{.*}}) <{kernel = @accy_kernels::@attend_item0_attention
// CUDA-NOT:      "gpu.launch_func"
// CUDA:          "gpu.func"() <{function_type = (memref<1x2x32x16xf32>, memref<1x32x2x16xf32>, memref<1x32x2x16xf32>, memref<1x32x2x16xf32>) -> (), kernel}>
// CUDA-NOT:      "gpu.func"
func.func @attend(%q: tensor<1x32x2x16xf32>, %k: tensor<1x32x2x16xf32>, %v: tensor<1x32x2x16xf32>) -> tensor<1x2x32x16xf32> {
  %s = accy.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3] : (tensor<1x32x2x16xf32>, tensor<1x32x2x16xf32>) -> tensor<1x2x32x32xf32>
  %mx = accy.reduce max %s, dims = [3] : (tensor<1x2x32x32xf32>) -> tensor<1x2x32xf32>
  %mb = accy.broadcast_in_dim %mx, dims = [0, 1, 2] : (tensor<1x2x32xf32>) -> tensor<1x2x32x32xf32>
  %z = accy.subtract %s, %mb : tensor<1x2x32x32xf32>
  %e = accy.exponential %z : tensor<1x2x32x32xf32>
  %sum = accy.reduce add %e, dims = [3] : (tensor<1x2x32x32xf32>) -> tensor<1x2x32xf32>
  %sb = accy.broadcast_in_dim %sum, dims = [0, 1, 2] : (tensor<1x2x32xf32>) -> tensor<1x2x32x32xf32>
  %p = accy.divide %e, %sb : tensor<1x2x32x32xf32>
  %o = accy.dot_general %p, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1] : (tensor<1x2x32x32xf32>, tensor<1x32x2x16xf32>) -> tensor<1x2x32x16xf32>
  func.return %o : tensor<1x2x32x16xf32>
}
