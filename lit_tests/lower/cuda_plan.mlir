// RUN: accy-opt %s -p 'accy-lower{target=cuda}' | filecheck %s

// The host function allocates the planned arena once, views each slot at its offset,
// copies the two inputs in (only if the allocation succeeded), launches the reduce.row
// kernel (the add, broadcast and multiply are its fused prologue), copies the result out
// and frees the arena. The non-splat constant is a
// constant-memory global (address space 4) of the kernel module, never copied; the
// reduction's tree uses a shared-memory global (address space 3).

// (`gpu.container_module` is on the module `lower_cuda` returns; `accy-lower` moves only
// the ops into the pass's module, so it is not checked here.)
// CHECK:      builtin.module
// CHECK:        func.func @f(%0: memref<4x8xf32>, %1: memref<8xf32>, %2: memref<4xf32>) attributes {llvm.emit_c_interface} {
// CHECK-NEXT:     %{{.*}} = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<[[ARENA:[0-9]+]]xi8>
// CHECK-COUNT-3:  memref.view
// CHECK:          "memref.extract_aligned_pointer_as_index"
// CHECK:          scf.if
// CHECK:            "gpu.memcpy"(%{{.*}}, %0)
// CHECK-NEXT:       "gpu.memcpy"(%{{.*}}, %1)
// CHECK-NOT:        "gpu.memcpy"
// CHECK:            "gpu.launch_func"({{.*}}) <{kernel = @accy_kernels::@f_item0_reduce_row
// CHECK-NEXT:       "gpu.memcpy"(%2, %{{.*}})
// CHECK:          "gpu.dealloc"
// CHECK-NEXT:     func.return
// CHECK:        "gpu.module"() <{sym_name = "accy_kernels"}> ({
// CHECK-DAG:      "memref.global"() <{sym_name = "f_item0_reduce_row_shared", type = memref<256xf32, 3 : i64>
// CHECK-DAG:      "memref.global"() <{sym_name = "accy_constant_2", type = memref<8xf32, 4 : i64>, initial_value = dense<
// CHECK:          "gpu.func"()
func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  %c = accy.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %s = accy.add %b, %c : tensor<8xf32>
  %bb = accy.broadcast_in_dim %s, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %m = accy.multiply %x, %bb : tensor<4x8xf32>
  %r = accy.reduce add %m, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
