// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | %mlir-check | filecheck %s --check-prefix=LLVM
// RUN: accy-opt %s --accy-target=cuda --accy-report arena -p accy-plan-buffers -o /dev/null 2>&1 | filecheck %s --check-prefix=PLAN

// A fused add -> multiply (one work item), a row reduction and a broadcasting divide.
// Slots: 0 %a, 1 %b (inputs), 2 %c (constant), 3 %e (exp, temporary, 16 bytes),
// 4 %r (reduce, temporary, 4 bytes), 5 %q (output, in place of 3: the divide reads %e
// pointwise). On the CPU inputs are the argument memrefs, the output is the out-param,
// and so is %e, which the output takes over in place: the CPU plan's arena holds only the
// temporary 4 (64 bytes).

func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = accy.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = accy.add %a, %b : tensor<4xf32>
  %t = accy.multiply %s, %c : tensor<4xf32>
  %e = accy.exponential %t : tensor<4xf32>
  %r = accy.reduce add %e, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %bb = accy.broadcast_in_dim %r, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %q = accy.divide %e, %bb : tensor<4xf32>
  return %q : tensor<4xf32>
}

// The CUDA plan (every device_global slot packed by liveness, 256-byte aligned):
// PLAN:      arena of @f: 768 bytes
// PLAN:      0 input offset 256 16 [0, 0]
// PLAN-NEXT: 1 input offset 512 16 [0, 0]
// PLAN-NEXT: 2 constant constant offset 0 16 [0, 2]
// PLAN-NEXT: 3 temporary offset 0 16 [0, 2]
// PLAN-NEXT: 4 temporary offset 256 4 [1, 2]
// PLAN-NEXT: 5 output offset 0 reuses slot 3 16 [2, 2]

// The constant lives in a read-only global.
// CHECK:      "memref.global"() <{sym_name = "accy_constant_0", type = memref<4xf32>, initial_value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>, sym_visibility = "private", constant
// Inputs first, then one out-param per result.
// CHECK:      func.func @accy_fn_f(%[[A:.*]]: memref<4xf32> {llvm.noalias}, %[[B:.*]]: memref<4xf32> {llvm.noalias}, %[[OUT:.*]]: memref<4xf32> {llvm.noalias}) attributes {llvm.emit_c_interface} {
// CHECK-DAG:  %[[OFF0:.*]] = arith.constant 0 : index
// The arena is allocated once at the CPU plan's 64 bytes (slot 4, 4 bytes aligned up to the
// CPU's 64-byte alignment, as accy.compile plans it).
// CHECK:      %arena = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:      %[[C:.*]] = memref.get_global @accy_constant_0 : memref<4xf32>
// CHECK:      %[[R:.*]] = memref.view %arena[%[[OFF0]]][] : memref<64xi8> to memref<f32>
// Work item 0: add, multiply, exp fused in one loop writing slot 3 (in the out-param).
// CHECK:      scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:        memref.load %[[A]][%[[I]]]
// CHECK:        memref.load %[[B]][%[[I]]]
// CHECK:        arith.addf
// CHECK:        memref.load %[[C]][%[[I]]]
// CHECK:        arith.mulf
// exp is a polynomial (see scalar.exp_f32): its 2**n scaling shows as a bitcast.
// CHECK:        arith.bitcast
// CHECK:        memref.store %{{.*}}, %[[OUT]][%[[I]]] : memref<4xf32>
// Work item 1: the reduction carries its accumulator.
// CHECK:      scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK:        arith.addf {{.*}} fastmath<reassoc> : f32
// CHECK:      memref.store %{{.*}}, %[[R]][] : memref<f32>
// Work item 2: the divide reads %e from the out-param and writes over it, element by
// element; the row sum it reads is loop-invariant, so its load is hoisted out of the loop.
// CHECK:      memref.load %[[R]][] : memref<f32>
// CHECK-NEXT: scf.for
// CHECK:        arith.divf
// CHECK:        memref.store %{{.*}}, %[[OUT]][%{{.*}}] : memref<4xf32>
// CHECK:      memref.dealloc %arena : memref<64xi8>
// CHECK-NEXT: func.return

// LLVM: llvm.func @accy_fn_f(
// LLVM: llvm.func @_mlir_ciface_accy_fn_f(
