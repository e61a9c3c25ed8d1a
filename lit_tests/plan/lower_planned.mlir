// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | %mlir-check > /dev/null

// Lowering reads the plan from the IR: a hand-written planned function (alignment 1024,
// the temporary at offset 1024) lowers to an arena of exactly that size and alignment
// with the view at that offset, the kernels as loop nests over their ins and outs.

// CHECK:      func.func @accy_fn_f(%x: memref<4xf32> {llvm.noalias}, %out0: memref<4xf32> {llvm.noalias})
// CHECK-DAG:  %[[OFF:.*]] = arith.constant 1024 : index
// CHECK:      %arena = memref.alloc() {alignment = 1024 : i64} : memref<2048xi8>
// CHECK:      scf.if
// CHECK:        %e = memref.view %arena[%[[OFF]]][] : memref<2048xi8> to memref<4xf32>
// CHECK:        scf.for
// CHECK:          memref.load %x
// CHECK:          memref.store %{{.*}}, %e
// CHECK:        scf.for
// CHECK:          memref.load %e
// CHECK:          arith.addf
// CHECK:          memref.store %{{.*}}, %out0
// CHECK:      } else {
// CHECK:        func.call @accy_allocation_failed
// CHECK:      memref.dealloc %arena
builtin.module attributes {accy.target = "cpu", accy.sm_count = 132 : i64} {
  func.func @f(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
    %arena = accy.arena alignment 1024 : memref<2048xi8, #accy.space<host>>
    %e = accy.view %arena[1024] : memref<2048xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
    accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%e : memref<4xf32, #accy.space<host>>) {
    ^bb0(%t: tensor<4xf32>):
      %y = accy.exponential %t : tensor<4xf32>
      accy.yield %y : tensor<4xf32>
    }
    accy.kernel 1 "elementwise" ins(%e : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
    ^bb0(%t: tensor<4xf32>):
      %one = accy.constant dense<1.0> : tensor<4xf32>
      %z = accy.add %t, %one : tensor<4xf32>
      accy.yield %z : tensor<4xf32>
    }
    func.return
  }
}
