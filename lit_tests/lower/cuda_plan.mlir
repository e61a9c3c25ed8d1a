// RUN: accy-opt %s -p 'accy-lower{target=cuda}' | filecheck %s

// The host function allocates the planned arena once and, only if the allocation
// succeeded, views each slot at its offset, copies the two inputs in, launches the reduce.row
// kernel (the add, broadcast and multiply are its fused prologue), copies the result out
// and frees the arena. The non-splat constant is a
// constant-memory global (address space 4) of the kernel module, never copied; the
// reduction's tree uses a shared-memory global (address space 3).

// (`gpu.container_module` is on the module `lower_cuda` returns; `accy-lower` moves only
// the ops into the pass's module, so it is not checked here.)
// CHECK:      builtin.module
// CHECK:        func.func @accy_fn_f(%x: memref<4x8xf32>, %b: memref<8xf32>, %out0: memref<4xf32>) attributes {llvm.emit_c_interface} {
// CHECK:          %arena = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<[[ARENA:[0-9]+]]xi8>
// CHECK-NEXT:     "memref.extract_aligned_pointer_as_index"(%arena)
// CHECK:          scf.if
// CHECK-COUNT-3:    memref.view %arena
// CHECK:            "gpu.memcpy"(%{{.*}}, %x)
// CHECK-NEXT:       "gpu.memcpy"(%{{.*}}, %b)
// CHECK-NOT:        "gpu.memcpy"
// CHECK:            "gpu.launch_func"({{.*}}) <{kernel = @accy_kernels::@f_item0_reduce_row
// CHECK-NEXT:       "gpu.memcpy"(%out0, %{{.*}})
// CHECK:          "gpu.dealloc"(%arena)
// CHECK-NEXT:     func.return
// CHECK:        "gpu.module"() <{sym_name = "accy_kernels"}> ({
// CHECK-DAG:      "memref.global"() <{sym_name = "f_item0_reduce_row_shared", type = memref<256xf32, 3 : i64>
// CHECK-DAG:      "memref.global"() <{sym_name = "accy_device_constant_0", type = memref<8xf32, 4 : i64>, initial_value = dense<
// CHECK:          "gpu.func"()
func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  %c = accy.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %s = accy.add %b, %c : tensor<8xf32>
  %bb = accy.broadcast_in_dim %s, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %m = accy.multiply %x, %bb : tensor<4x8xf32>
  %r = accy.reduce add %m, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
