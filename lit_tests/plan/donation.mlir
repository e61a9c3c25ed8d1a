// RUN: accy-opt %s -p 'accy-plan{target=cpu donate=true}' | filecheck %s
// RUN: accy-opt %s -p 'accy-plan{target=cpu donate=true}' | accy-opt -p 'accy-lower{target=cpu}' | filecheck %s --check-prefix=LOWERED
// RUN: accy-opt %s -p 'accy-plan{target=cpu}' | filecheck %s --check-prefix=KEPT

// A donated parameter on the CPU, planned with `donate`: the update `p - lr * g` reads %p pointwise where %p dies,
// so its result takes %p's buffer over: the out-parameter is marked `accy.donor = 0` (a
// call that donates passes %p's array as it) and, lowered, neither it nor %p is
// `llvm.noalias`; the other arguments are. Without `donate` no out-parameter takes one over.

// CHECK:       func.func @step(%p: memref<256xf32, #accy.space<host>> {accy.donated}, %g: memref<256xf32, #accy.space<host>>, %out0: memref<256xf32, #accy.space<host>> {accy.output = 0 : i64, accy.donor = 0 : i64}, %out1: memref<f32, #accy.space<host>> {accy.output = 1 : i64})

// KEPT:        %out0: memref<256xf32, #accy.space<host>> {accy.output = 0 : i64},

// LOWERED:     func.func @accy_fn_step(%p: memref<256xf32>, %g: memref<256xf32> {llvm.noalias}, %out0: memref<256xf32>, %out1: memref<f32> {llvm.noalias})

func.func @step(%p: tensor<256xf32> {accy.donated}, %g: tensor<256xf32>) -> (tensor<256xf32>, tensor<f32>) {
  %lr = accy.constant dense<0.5> : tensor<256xf32>
  %u = accy.multiply %lr, %g : tensor<256xf32>
  %q = accy.subtract %p, %u : tensor<256xf32>
  %n = accy.reduce add %g, dims = [0] : (tensor<256xf32>) -> tensor<f32>
  func.return %q, %n : tensor<256xf32>, tensor<f32>
}
