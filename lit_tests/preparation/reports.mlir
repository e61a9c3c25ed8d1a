// RUN: accy-opt %s --accy-report=shapes 2>&1 >/dev/null | filecheck %s --check-prefix=SHAPES
// RUN: accy-opt %s --accy-report=fusion 2>&1 >/dev/null | filecheck %s --check-prefix=FUSION
// RUN: accy-opt %s --accy-report=buffers 2>&1 >/dev/null | filecheck %s --check-prefix=BUFFERS

// The shape, fusion and buffer reports of one program: %0 (the add) fuses into the
// multiply and gets no slot; the iterate's results are the loop's carried buffers, the
// first in the slot of %1, its init computed for it alone.

// SHAPES:      shapes: 11 value(s)
// SHAPES-NEXT: function               value  element  shape  bytes  strides
// SHAPES-NEXT: @memory_fused_add_mul  %a     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %b     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %c     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %k     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %0     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %1     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %r     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %r_1   f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %p     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %q     f32      4      16     [1]
// SHAPES-NEXT: @memory_fused_add_mul  %p2    f32      4      16     [1]
// SHAPES-NOT:  {{.}}

// FUSION:      fusion: 3 group(s), 1 elided value(s)
// FUSION-NEXT: group  root           ops  elided values  members
// FUSION-NEXT: 0      accy.multiply  2    1              add, multiply
// FUSION-NEXT: 1      accy.iterate   1    0              iterate
// FUSION-NEXT: 2      accy.add       1    0              add
// FUSION-NOT:  {{.}}

// BUFFERS:      buffers: 7 slot(s), 112 static bytes, 1 elided value(s)
// BUFFERS-NEXT: slot  function               value  producer       role          bytes
// BUFFERS-NEXT: 0     @memory_fused_add_mul  %a     argument       input+output  16
// BUFFERS-NEXT: 1     @memory_fused_add_mul  %b     argument       input         16
// BUFFERS-NEXT: 2     @memory_fused_add_mul  %c     argument       input         16
// BUFFERS-NEXT: 3     @memory_fused_add_mul  %k     accy.constant  constant      16
// BUFFERS-NEXT: 4     @memory_fused_add_mul  %1     accy.multiply  output        16
// BUFFERS-NEXT: 5     @memory_fused_add_mul  %r_1   accy.iterate   temporary     16
// BUFFERS-NEXT: 6     @memory_fused_add_mul  %p2    accy.add       temporary     16
// BUFFERS-NOT:  {{.}}

func.func @memory_fused_add_mul(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %k = accy.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = accy.add %a, %b : tensor<4xf32>
  %1 = accy.multiply %0, %k : tensor<4xf32>
  %r:2 = accy.iterate 3 iter_args(%p = %1, %q = %c) : tensor<4xf32>, tensor<4xf32> {
    %p2 = accy.add %p, %q : tensor<4xf32>
    accy.yield %p2, %q : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r#0, %a : tensor<4xf32>, tensor<4xf32>
}
