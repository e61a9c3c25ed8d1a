// RUN: accy-opt %s -p 'accy-plan{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-plan{target=cpu}' | accy-opt -p 'accy-lower{target=cpu}' | filecheck %s --check-prefix=LOWERED
// RUN: accy-opt %s -p 'accy-plan{target=cpu}' | accy-opt -p 'accy-lower{target=cpu}' | %mlir-check > /dev/null

// Scratch in an out-parameter (CPU): %t (16 KiB) dies at the reduce, before anything
// touches %o's out-parameter, so it lies in %o's bytes, in an arena there; %r, which %o's
// own kernel reads, stays in the function's arena (256 bytes, where it needed 16640).
// Lowered, the out-parameter's bytes are a memref<16384xi8> built from its descriptor.

// CHECK-LABEL: func.func @f(
// CHECK-SAME:    %out0: memref<64x64xf32, #accy.space<host>> {accy.output = 0 : i64}
// CHECK:         %arena = accy.arena alignment 64 : memref<256xi8, #accy.space<host>>
// CHECK:         %[[SCRATCH:.*]] = accy.arena alignment 64 in %out0 : memref<64x64xf32, #accy.space<host>> : memref<16384xi8, #accy.space<host>>
// CHECK:         %[[T:.*]] = accy.view %[[SCRATCH]][0] : memref<16384xi8, #accy.space<host>> to memref<64x64xf32, #accy.space<host>>
// CHECK:         %[[R:.*]] = accy.view %arena[0] : memref<256xi8, #accy.space<host>> to memref<64xf32, #accy.space<host>>
// CHECK:         accy.kernel 0 "transpose" ins(%x : {{.*}}) outs(%[[T]] :
// CHECK:         accy.kernel 1 "reduce" ins(%[[T]] : {{.*}}) outs(%[[R]] :
// CHECK:         accy.kernel 2 "elementwise" ins(%[[R]], %x : {{.*}}) outs(%out0 :

// LOWERED:       builtin.unrealized_conversion_cast %out0 : memref<64x64xf32> to !llvm.struct<(!llvm.ptr, !llvm.ptr, i64, !llvm.array<2 x i64>, !llvm.array<2 x i64>)>
// LOWERED:       llvm.getelementptr
// LOWERED:       builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(!llvm.ptr, !llvm.ptr, i64, !llvm.array<1 x i64>, !llvm.array<1 x i64>)> to memref<16384xi8>
// LOWERED:       memref.view %{{.*}}[%{{.*}}][] : memref<16384xi8> to memref<64x64xf32>

func.func @f(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %t = accy.transpose %x, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = accy.reduce add %t, dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  %b = accy.broadcast_in_dim %r, dims = [0] : (tensor<64xf32>) -> tensor<64x64xf32>
  %o = accy.add %x, %b : tensor<64x64xf32>
  func.return %o : tensor<64x64xf32>
}
