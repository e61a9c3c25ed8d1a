// RUN: accy-opt %s -p accy-plan-fusion | filecheck %s

// A fusible producer (elementwise, compare/select/convert, broadcast, reshape) with a
// single consumer (a fusible op or a reduce; `multiply %x, %x` is one consumer) joins
// its consumer's group and is elided, as does one whose consumers are all pointwise ops
// of one group (@shared); a returned value, a value read by two groups, constants and
// non-fusible ops root groups (constants belong to none).

// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %s = accy.add %a, %b {accy.fusion = "group 0 elided"}
// CHECK-NEXT:    %e = accy.exponential %s {accy.fusion = "group 0 elided"}
// CHECK-NEXT:    %p = accy.multiply %e, %c {accy.fusion = "group 0 root"}
// CHECK-NEXT:    func.return %p
func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %a, %b : tensor<4xf32>
  %e = accy.exponential %s : tensor<4xf32>
  %p = accy.multiply %e, %c : tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// CHECK-LABEL: func.func @uses(
// CHECK-NEXT:    %k = accy.constant dense<2.000000e+00> : tensor<4xf32>{{$}}
// CHECK-NEXT:    %twice = accy.add %a, %k {accy.fusion = "group 1 elided"}
// CHECK-NEXT:    %m = accy.multiply %twice, %twice {accy.fusion = "group 1 root"}
// CHECK-NEXT:    %n = accy.negate %a {accy.fusion = "group 2 root"}
// CHECK-NEXT:    %o = accy.abs %n {accy.fusion = "group 3 root"}
// CHECK-NEXT:    func.return %m, %n, %o
func.func @uses(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %k = accy.constant dense<2.0> : tensor<4xf32>
  %twice = accy.add %a, %k : tensor<4xf32>
  %m = accy.multiply %twice, %twice : tensor<4xf32>
  %n = accy.negate %a : tensor<4xf32>
  %o = accy.abs %n : tensor<4xf32>
  func.return %m, %n, %o : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// A reduce takes an elementwise prologue; a transpose and a dot root their own groups
// and take none.
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %e = accy.exponential %x {accy.fusion = "group 4 elided"}
// CHECK-NEXT:    %sum = accy.reduce add %e, dims = [1] {accy.fusion = "group 4 root"}
// CHECK-NEXT:    %b = accy.broadcast_in_dim %sum, dims = [0] {accy.fusion = "group 5 elided"}
// CHECK-NEXT:    %d = accy.divide %x, %b {accy.fusion = "group 5 root"}
// CHECK-NEXT:    %n = accy.negate %d {accy.fusion = "group 6 root"}
// CHECK-NEXT:    %t = accy.transpose %n, dims = [1, 0] {accy.fusion = "group 7 root"}
// CHECK-NEXT:    %g = accy.dot_general %d, %t
// CHECK-SAME:      {accy.fusion = "group 8 root"}
func.func @softmax(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %e = accy.exponential %x : tensor<2x3xf32>
  %sum = accy.reduce add %e, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %b = accy.broadcast_in_dim %sum, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
  %d = accy.divide %x, %b : tensor<2x3xf32>
  %n = accy.negate %d : tensor<2x3xf32>
  %t = accy.transpose %n, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %g = accy.dot_general %d, %t, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %g : tensor<2x2xf32>
}

// A loop roots its group (one entry per result); its body is fused on its own, after it.
// A value yielded by the body is not fused into the yield.
// CHECK-LABEL: func.func @loop(
// CHECK:           %p2 = accy.add %p, %q {accy.fusion = "group 10 elided"}
// CHECK-NEXT:      %t = accy.tanh %p2 {accy.fusion = "group 10 root"}
// CHECK-NEXT:      accy.yield %t, %q
// CHECK-NEXT:    } {accy.fusion = ["group 9 root", "group 9 root"]}
// CHECK-NEXT:    %c = accy.scan add %r, %s, dim = 1 {accy.fusion = "group 11 root"}
// CHECK-NEXT:    %flat = accy.reshape %c {accy.fusion = "group 12 elided"}
// CHECK-NEXT:    %back = accy.reshape %flat {accy.fusion = "group 12 root"}
func.func @loop(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %r:2 = accy.iterate 4 iter_args(%p = %x, %q = %y) : tensor<2x3xf32>, tensor<2x3xf32> {
    %p2 = accy.add %p, %q : tensor<2x3xf32>
    %t = accy.tanh %p2 : tensor<2x3xf32>
    accy.yield %t, %q : tensor<2x3xf32>, tensor<2x3xf32>
  }
  %c = accy.scan add %r#0, %s, dim = 1 : tensor<2x3xf32>
  %flat = accy.reshape %c : (tensor<2x3xf32>) -> tensor<6xf32>
  %back = accy.reshape %flat : (tensor<6xf32>) -> tensor<2x3xf32>
  func.return %back, %r#1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// Read by three pointwise ops that all end in %g's group, %h joins it: the group computes
// it once per element (GELU's `x + b`). %p is read by two groups (%q's and %w's), so it
// roots its own and is stored.
// CHECK-LABEL: func.func @shared(
// CHECK-NEXT:    %h = accy.add %x, %b {accy.fusion = "group 13 elided"}
// CHECK-NEXT:    %sq = accy.multiply %h, %h {accy.fusion = "group 13 elided"}
// CHECK-NEXT:    %th = accy.tanh %sq {accy.fusion = "group 13 elided"}
// CHECK-NEXT:    %g = accy.multiply %h, %th {accy.fusion = "group 13 root"}
// CHECK-NEXT:    %p = accy.negate %x {accy.fusion = "group 14 root"}
// CHECK-NEXT:    %q = accy.add %p, %x {accy.fusion = "group 15 root"}
// CHECK-NEXT:    %w = accy.broadcast_in_dim %p, dims = [0] {accy.fusion = "group 16 root"}
func.func @shared(%x: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x2xf32>) {
  %h = accy.add %x, %b : tensor<4xf32>
  %sq = accy.multiply %h, %h : tensor<4xf32>
  %th = accy.tanh %sq : tensor<4xf32>
  %g = accy.multiply %h, %th : tensor<4xf32>
  %p = accy.negate %x : tensor<4xf32>
  %q = accy.add %p, %x : tensor<4xf32>
  %w = accy.broadcast_in_dim %p, dims = [0] : (tensor<4xf32>) -> tensor<4x2xf32>
  func.return %g, %q, %w : tensor<4xf32>, tensor<4xf32>, tensor<4x2xf32>
}

// A scatter computes its inputs, indices and updates in its kernels (segment_sum's zero
// table, reshaped ids and ones), a fold its operands (an argmax's iota of positions).
// CHECK-LABEL: func.func @segment_count(
// CHECK:         %table = accy.broadcast_in_dim %zero, dims = [] {accy.fusion = "group [[G:[0-9]+]] elided"}
// CHECK-NEXT:    %index = accy.reshape %ids {accy.fusion = "group [[G]] elided"}
// CHECK-NEXT:    %ones = accy.broadcast_in_dim %one, dims = [] {accy.fusion = "group [[G]] elided"}
// CHECK-NEXT:    %r = accy.scatter %table[%index] updates(%ones), {{.*}} {accy.fusion = "group [[G]] root"}
// CHECK-LABEL: func.func @argmax(
// CHECK:         %iota = accy.iota dim = 1 {accy.fusion = "group [[H:[0-9]+]] elided"}
// CHECK:         %v, %i = accy.fold(%x, %iota {{.*}} {accy.fusion = ["group [[H]] root", "group [[H]] root"]}
func.func @segment_count(%ids: tensor<8xi32>, %one: tensor<f32>) -> tensor<4xf32> {
  %zero = accy.constant dense<0.0> : tensor<f32>
  %table = accy.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %index = accy.reshape %ids : (tensor<8xi32>) -> tensor<8x1xi32>
  %ones = accy.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %r = accy.scatter %table[%index] updates(%ones), update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<4xf32>), tensor<8x1xi32>, (tensor<8xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = accy.add %a, %b : tensor<f32>
    accy.yield %s : tensor<f32>
  }
  func.return %r : tensor<4xf32>
}

func.func @argmax(%x: tensor<4x9xf32>) -> tensor<4xi32> {
  %iota = accy.iota dim = 1 : tensor<4x9xi32>
  %x0 = accy.constant dense<-3.0e38> : tensor<f32>
  %i0 = accy.constant dense<0> : tensor<i32>
  %v, %i = accy.fold(%x, %iota : tensor<4x9xf32>, tensor<4x9xi32>) init(%x0, %i0 : tensor<f32>, tensor<i32>), dims = [1] -> (tensor<4xf32>, tensor<4xi32>) {
  ^bb0(%a: tensor<f32>, %j: tensor<i32>, %b: tensor<f32>, %k: tensor<i32>):
    %gt = accy.compare GT, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %c = accy.select %gt, %b, %a : tensor<i1>, tensor<f32>
    %l = accy.select %gt, %k, %j : tensor<i1>, tensor<i32>
    accy.yield %c, %l : tensor<f32>, tensor<i32>
  }
  func.return %i : tensor<4xi32>
}

// A convert of bf16/f16 to f32 read only by a dot_general is the dot's operand prologue
// (the product extends each element as it loads it); a convert the dot shares with
// another consumer, or a narrowing one, roots its own group.
// CHECK-LABEL: func.func @mixed_precision(
// CHECK-NEXT:    %xf = accy.convert %x {accy.fusion = "group [[G:[0-9]+]] elided"}
// CHECK-NEXT:    %wf = accy.convert %w {accy.fusion = "group [[G]] elided"}
// CHECK-NEXT:    %y = accy.dot_general %xf, %wf
// CHECK-SAME:      {accy.fusion = "group [[G]] root"}
// CHECK-NEXT:    %vf = accy.convert %v {accy.fusion = "group [[H:[0-9]+]] root"}
// CHECK-NEXT:    %z = accy.dot_general %y, %vf
// CHECK-SAME:      {accy.fusion = "group [[Z:[0-9]+]] elided"}
// CHECK-NEXT:    %s = accy.add %z, %vf {accy.fusion = "group [[Z]] root"}
func.func @mixed_precision(%x: tensor<4x8xbf16>, %w: tensor<8x4xbf16>, %v: tensor<4x4xf16>) -> tensor<4x4xf32> {
  %xf = accy.convert %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %wf = accy.convert %w : (tensor<8x4xbf16>) -> tensor<8x4xf32>
  %y = accy.dot_general %xf, %wf, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %vf = accy.convert %v : (tensor<4x4xf16>) -> tensor<4x4xf32>
  %z = accy.dot_general %y, %vf, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = accy.add %z, %vf : tensor<4x4xf32>
  func.return %s : tensor<4x4xf32>
}

// A dot_general joins its consumers' group as its epilogue when that group is elementwise
// on its shape from there on (bias, activation, residual: GELU's
// five uses of the product are one group); a group computes one product, so of two
// products summed the later joins and the earlier is stored; a product also returned,
// or read by a reduce, is stored.
// CHECK-LABEL: func.func @epilogues(
// CHECK-NEXT:    %y = accy.dot_general %x, %w
// CHECK-SAME:      {accy.fusion = "group [[A:[0-9]+]] elided"}
// CHECK-NEXT:    %bb = accy.broadcast_in_dim %b, dims = [1] {accy.fusion = "group [[A]] elided"}
// CHECK-NEXT:    %z = accy.add %y, %bb {accy.fusion = "group [[A]] elided"}
// CHECK-NEXT:    %cube = accy.multiply %z, %z {accy.fusion = "group [[A]] elided"}
// CHECK-NEXT:    %t = accy.tanh %cube {accy.fusion = "group [[A]] elided"}
// CHECK-NEXT:    %g = accy.multiply %z, %t {accy.fusion = "group [[A]] root"}
// CHECK-NEXT:    %p = accy.dot_general %g, %v
// CHECK-SAME:      {accy.fusion = "group [[P:[0-9]+]] root"}
// CHECK-NEXT:    %q = accy.dot_general %g, %v
// CHECK-SAME:      {accy.fusion = "group [[Q:[0-9]+]] elided"}
// CHECK-NEXT:    %s = accy.add %p, %q {accy.fusion = "group [[Q]] root"}
// CHECK-NEXT:    %r = accy.dot_general %s, %v
// CHECK-SAME:      {accy.fusion = "group [[R:[0-9]+]] root"}
// CHECK-NEXT:    %n = accy.negate %r {accy.fusion = "group {{[0-9]+}} root"}
func.func @epilogues(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %v: tensor<16x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %z = accy.add %y, %bb : tensor<4x16xf32>
  %cube = accy.multiply %z, %z : tensor<4x16xf32>
  %t = accy.tanh %cube : tensor<4x16xf32>
  %g = accy.multiply %z, %t : tensor<4x16xf32>
  %p = accy.dot_general %g, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %q = accy.dot_general %g, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %s = accy.add %p, %q : tensor<4x16xf32>
  %r = accy.dot_general %s, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %n = accy.negate %r : tensor<4x16xf32>
  func.return %n, %r : tensor<4x16xf32>, tensor<4x16xf32>
}

// An epilogue may end in a convert to another type: a mixed-precision layer's bias, ReLU
// and bf16 rounding are one kernel, which stores the bf16 value; the f32 product never gets
// a buffer (the zoo's mixed_precision_matmul: 16384 B of temporaries -> 0).
// CHECK-LABEL: func.func @narrowing_epilogue(
// CHECK-NEXT:    %y = accy.dot_general %x, %w
// CHECK-SAME:      {accy.fusion = "group [[N:[0-9]+]] elided"}
// CHECK-NEXT:    %bb = accy.broadcast_in_dim %b, dims = [1] {accy.fusion = "group [[N]] elided"}
// CHECK-NEXT:    %z = accy.add %y, %bb {accy.fusion = "group [[N]] elided"}
// CHECK-NEXT:    %zero = accy.constant
// CHECK-NEXT:    %a = accy.maximum %z, %zero {accy.fusion = "group [[N]] elided"}
// CHECK-NEXT:    %o = accy.convert %a {accy.fusion = "group [[N]] root"}
func.func @narrowing_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xbf16> {
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %z = accy.add %y, %bb : tensor<4x16xf32>
  %zero = accy.constant dense<0.0> : tensor<4x16xf32>
  %a = accy.maximum %z, %zero : tensor<4x16xf32>
  %o = accy.convert %a : (tensor<4x16xf32>) -> tensor<4x16xbf16>
  func.return %o : tensor<4x16xbf16>
}
