// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena{check=true}' | filecheck %s

// In-place reuse: the output of an elementwise work item takes over the buffer of an
// input of the same byte size that dies at that item, when every member on the way from
// that input to the output is pointwise (element i reads only element i), the input is a
// temporary or a donated parameter (not another function input, a constant or an output)
// and neither is in a loop. Slots are numbered across the module (a function's parameters
// first, then its results in order); the output's placement says `reuses slot N`, N the
// buffer's first owner.

// Slots: 0 = %a, 1 = %r, 2 = %e. Items: 0 = %r, 1 = %e (negate and exponential fused).
// %r (12 B → 256 B aligned) is live [0, 1] at [0, 256); it dies at item 1, which reads
// element i of %r to write element i of %e (12 B): %e reuses slot 1, [0, 256).
// %a (48 B) needs its own [256, 512): arena 512 bytes.

// CHECK-LABEL: func.func @pointwise(
// CHECK-SAME:      %a: tensor<4x3xf32> {accy.arena = "offset 256 live [0, 0]"}
// CHECK-SAME:      attributes {accy.arena_size = 512 : i64}
// CHECK-NEXT:    %r = accy.reduce add %a, dims = [0] {accy.arena = "offset 0 live [0, 1]"}
// CHECK-NEXT:    %n = accy.negate %r : tensor<3xf32>{{$}}
// CHECK-NEXT:    %e = accy.exponential %n {accy.arena = "offset 0 live [1, 1] reuses slot 1"}
func.func @pointwise(%a: tensor<4x3xf32>) -> tensor<3xf32> {
  %r = accy.reduce add %a, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %n = accy.negate %r : tensor<3xf32>
  %e = accy.exponential %n : tensor<3xf32>
  func.return %e : tensor<3xf32>
}

// A chain: slots 3 = %a, 4 = %r, 5 = %n, 6 = %m, 7 = %e. Items 2 = %r, 3 = %n, 4 = %m
// (with the broadcast of %n fused in), 5 = %e. %n reuses %r (which dies at item 3) and
// %e reuses %n (which dies at item 5): the three share %r's buffer, [0, 256), live
// [2, 5] in all, and both name its first owner, slot 4. %m (live [4, 5]) sits beside it
// at [256, 512), where %a (live [2, 2]) was.

// CHECK-LABEL: func.func @chain(
// CHECK-SAME:      %a: tensor<4x3xf32> {accy.arena = "offset 256 live [2, 2]"}
// CHECK-SAME:      attributes {accy.arena_size = 512 : i64}
// CHECK-NEXT:         %r = accy.reduce add %a, dims = [0] {accy.arena = "offset 0 live [2, 3]"}
// CHECK-NEXT:    %n = accy.negate %r {accy.arena = "offset 0 live [3, 5] reuses slot 4"}
// CHECK:         %m = accy.reduce max %b, dims = [0] {accy.arena = "offset 256 live [4, 5]"}
// CHECK-NEXT:    %e = accy.exponential %n {accy.arena = "offset 0 live [5, 5] reuses slot 4"}
func.func @chain(%a: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %r = accy.reduce add %a, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %n = accy.negate %r : tensor<3xf32>
  %b = accy.broadcast_in_dim %n, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %m = accy.reduce max %b, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
  %e = accy.exponential %n : tensor<3xf32>
  func.return %e, %m : tensor<3xf32>, tensor<3xf32>
}

// Not in place when the byte sizes differ: %c is 3 x i1 = 3 bytes, %f 3 x f32 = 12
// bytes. Both round up to 256 B, but a kernel writing 4-byte element i over 1-byte
// element i would clobber elements it has not read yet. %c (live [6, 7]) takes [0, 256);
// %f (live [7, 7]) takes [256, 512), %a's bytes once %a dies at item 6: packed, not in
// place.

// CHECK-LABEL: func.func @widening(
// CHECK-SAME:      %a: tensor<4x3xf32> {accy.arena = "offset 256 live [6, 6]"}
// CHECK:         %c = accy.reduce max %p, dims = [0] {accy.arena = "offset 0 live [6, 7]"}
// CHECK-NEXT:    %f = accy.convert %c {accy.arena = "offset 256 live [7, 7]"}
// CHECK-NOT:     reuses
func.func @widening(%a: tensor<4x3xf32>) -> tensor<3xf32> {
  %p = accy.compare GT, %a, %a : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xi1>
  %c = accy.reduce max %p, dims = [0] : (tensor<4x3xi1>) -> tensor<3xi1>
  %f = accy.convert %c : (tensor<3xi1>) -> tensor<3xf32>
  func.return %f : tensor<3xf32>
}

// A broadcast elsewhere in the group is fine: item 10 reads %r (12 B, dying there)
// straight into the add, and the broadcast scalar %s only as a bias. Element i of %o
// reads element i of %r: %o reuses slot 12, [0, 256).
//   %r [8, 10] → [0, 256); %a [8, 9] → [256, 512); %s [9, 10] → [512, 768).

// CHECK-LABEL: func.func @broadcast_bias(
// CHECK-SAME:      %a: tensor<4x3xf32> {accy.arena = "offset 256 live [8, 9]"}
// CHECK-SAME:      attributes {accy.arena_size = 768 : i64}
// CHECK-NEXT:    %r = accy.reduce add %a, dims = [0] {accy.arena = "offset 0 live [8, 10]"}
// CHECK-NEXT:    %s = accy.reduce max %a, dims = [0, 1] {accy.arena = "offset 512 live [9, 10]"}
// CHECK-NEXT:    %b = accy.broadcast_in_dim
// CHECK-NEXT:    %o = accy.add %r, %b {accy.arena = "offset 0 live [10, 10] reuses slot 12"}
func.func @broadcast_bias(%a: tensor<4x3xf32>) -> tensor<3xf32> {
  %r = accy.reduce add %a, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %s = accy.reduce max %a, dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32>
  %b = accy.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %o = accy.add %r, %b : tensor<3xf32>
  func.return %o : tensor<3xf32>
}

// Not in place through a broadcast: slots 15 = %a, 16 = %r, 17 = %o; items 11 = %r,
// 12 = %o. %r (16 B) dies at item 12 and %o is 16 B too, but %r reaches %o through a
// broadcast_in_dim that swaps the dims: element (i, j) of %o reads element (j, i) of %r,
// so writing %o over %r would clobber (1, 0) before it is read for (0, 1). %r keeps
// [0, 256); %o takes [256, 512), %a's bytes after %a dies at item 11.

// CHECK-LABEL: func.func @through_broadcast(
// CHECK-SAME:      %a: tensor<3x2x2xf32> {accy.arena = "offset 256 live [11, 11]"}
// CHECK-SAME:      attributes {accy.arena_size = 512 : i64}
// CHECK-NEXT:    %r = accy.reduce add %a, dims = [0] {accy.arena = "offset 0 live [11, 12]"}
// CHECK-NEXT:    %t = accy.broadcast_in_dim %r, dims = [1, 0]
// CHECK-NEXT:    %o = accy.negate %t {accy.arena = "offset 256 live [12, 12]"}
// CHECK-NOT:     reuses
func.func @through_broadcast(%a: tensor<3x2x2xf32>) -> tensor<2x2xf32> {
  %r = accy.reduce add %a, dims = [0] : (tensor<3x2x2xf32>) -> tensor<2x2xf32>
  %t = accy.broadcast_in_dim %r, dims = [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %o = accy.negate %t : tensor<2x2xf32>
  func.return %o : tensor<2x2xf32>
}

// Not in place over a function input that is not donated (see @over_donated_input at the
// end): the caller still owns %a's buffer. Both are live at item 13, so they take
// [0, 256) and [256, 512).

// CHECK-LABEL: func.func @over_input(
// CHECK-SAME:      %a: tensor<3xf32> {accy.arena = "offset 0 live [13, 13]"}
// CHECK-SAME:      attributes {accy.arena_size = 512 : i64}
// CHECK-NEXT:    %o = accy.negate %a {accy.arena = "offset 256 live [13, 13]"}
// CHECK-NOT:     reuses
func.func @over_input(%a: tensor<3xf32>) -> tensor<3xf32> {
  %o = accy.negate %a : tensor<3xf32>
  func.return %o : tensor<3xf32>
}

// In place inside a loop body: item 16 (%q, with the negate fused in) reads %t, written
// in the body and dying there, so %q takes its buffer (it is copied into the carried
// buffer after each iteration). Not over a loop's result: item 17 reads %r, the carried
// buffer the body's %p shares, live over the loop [14, 16] and until its last reader,
// 17. %a is read in the body: live until the loop ends, 16.
//   %r [14, 17] → [0, 256); %a [14, 16] → [256, 512); %x [14, 14] → [512, 768);
//   %t and %q [15, 16] → [512, 768) after %x is copied in at item 14;
//   %e [17, 17] → [256, 512) after %a dies at item 16.

// CHECK-LABEL: func.func @loops(
// CHECK-SAME:      %a: tensor<4x3xf32> {accy.arena = "offset 256 live [14, 16]"}
// CHECK-SAME:      %x: tensor<3xf32> {accy.arena = "offset 512 live [14, 14]"}
// CHECK-SAME:      attributes {accy.arena_size = 768 : i64}
// CHECK:         %t = accy.reduce add %a, dims = [0] {accy.arena = "offset 512 live [15, 16]"}
// CHECK:         %q = accy.add %n, %p {accy.arena = "offset 512 live [16, 16] reuses slot [[T:[0-9]+]]"}
// CHECK:         } {accy.arena = "offset 0 live [14, 17]"}
// CHECK-NEXT:    %e = accy.exponential %r {accy.arena = "offset 256 live [17, 17]"}
// CHECK-NOT:     reuses
func.func @loops(%a: tensor<4x3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %r = accy.iterate 3 iter_args(%p = %x) : tensor<3xf32> {
    %t = accy.reduce add %a, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
    %n = accy.negate %t : tensor<3xf32>
    %q = accy.add %n, %p : tensor<3xf32>
    accy.yield %q : tensor<3xf32>
  }
  %e = accy.exponential %r : tensor<3xf32>
  func.return %e : tensor<3xf32>
}

// Over a donated input: %a carries `accy.donated`, so the caller gives its buffer up, and
// %o (12 B) takes it over at item 18, where %a (12 B) dies: slots 26 = %a and 28 = %o
// share [0, 256). Not over %b (slot 27), which is not donated: [256, 512).

// CHECK-LABEL: func.func @over_donated_input(
// CHECK-SAME:      %a: tensor<3xf32> {accy.donated, accy.arena = "offset 0 live [18, 18]"}
// CHECK-SAME:      %b: tensor<3xf32> {accy.arena = "offset 256 live [18, 18]"}
// CHECK-SAME:      attributes {accy.arena_size = 512 : i64}
// CHECK-NEXT:    %o = accy.subtract %a, %b {accy.arena = "offset 0 live [18, 18] reuses slot 26"}
func.func @over_donated_input(%a: tensor<3xf32> {accy.donated}, %b: tensor<3xf32>) -> tensor<3xf32> {
  %o = accy.subtract %a, %b : tensor<3xf32>
  func.return %o : tensor<3xf32>
}
