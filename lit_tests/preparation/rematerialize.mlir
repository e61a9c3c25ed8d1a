// RUN: accy-opt %s --split-input-file -p accy-rematerialize | filecheck %s
// RUN: accy-opt %s --split-input-file --accy-report=arena 2>&1 >/dev/null | filecheck %s --check-prefix=STORED
// RUN: accy-opt %s --split-input-file -p accy-rematerialize | accy-opt --split-input-file --accy-report=arena 2>&1 >/dev/null | filecheck %s --check-prefix=RECOMPUTED

// BatchNorm's `x - mean` read by the next product and again, two products later, by a
// gradient: for that late reader it is recomputed from %x (a parameter) and %mean (1/64 of
// its bytes), and the clones fuse into the reader's kernel; the stored value dies at its
// first reader. Temporaries: %c, %y, %u live at once (196608 B) -> %y, %u (131072 B).
// CHECK-LABEL: func.func @batch_norm(
// CHECK:         %c = accy.subtract %x, %mb
// CHECK-NEXT:    %y = accy.dot_general %c, %w
// CHECK-NEXT:    %u = accy.dot_general %y, %w
// CHECK-NEXT:    %mb_remat = accy.broadcast_in_dim %mean, dims = [1]
// CHECK-NEXT:    %c_remat = accy.subtract %x, %mb_remat
// CHECK-NEXT:    %s = accy.multiply %c_remat, %u
// STORED:        arena of @batch_norm: 196608 bytes
// RECOMPUTED:    arena of @batch_norm: 131072 bytes
func.func @batch_norm(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>, %mean: tensor<256xf32>) -> tensor<256xf32> {
  %mb = accy.broadcast_in_dim %mean, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
  %c = accy.subtract %x, %mb : tensor<64x256xf32>
  %y = accy.dot_general %c, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %u = accy.dot_general %y, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %s = accy.multiply %c, %u : tensor<64x256xf32>
  %r = accy.reduce add %s, dims = [0] : (tensor<64x256xf32>) -> tensor<256xf32>
  func.return %r : tensor<256xf32>
}

// -----

// Not recomputed: a transcendental (softmax's `exp`, read by its sum and its division),
// a late reader that loads its operand rather than computing it (a product), and a
// recomputation that would keep a large value (%z, as large as %c) live longer.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT:     _remat
// CHECK:         func.return
func.func @kept(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>, %z: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>) {
  %e = accy.exponential %x : tensor<64x256xf32>
  %y = accy.dot_general %e, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %t = accy.transpose %y, dims = [1, 0] : (tensor<64x256xf32>) -> tensor<256x64xf32>
  %b = accy.reshape %t : (tensor<256x64xf32>) -> tensor<64x256xf32>
  %s = accy.multiply %e, %b : tensor<64x256xf32>
  %zz = accy.exponential %z : tensor<64x256xf32>
  %c = accy.add %x, %zz : tensor<64x256xf32>
  %v = accy.dot_general %c, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %p = accy.dot_general %c, %v, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x64xf32>
  %q = accy.transpose %v, dims = [1, 0] : (tensor<64x256xf32>) -> tensor<256x64xf32>
  %qq = accy.reshape %q : (tensor<256x64xf32>) -> tensor<64x256xf32>
  %m = accy.multiply %c, %qq : tensor<64x256xf32>
  func.return %s, %m, %y : tensor<64x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>
}

// -----

// Not recomputed: a value that is also a result is stored whole anyway.
// CHECK-LABEL: func.func @returned(
// CHECK-NOT:     _remat
// CHECK:         func.return
func.func @returned(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>) {
  %h = accy.add %x, %x : tensor<64x256xf32>
  %y = accy.dot_general %h, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %s = accy.multiply %h, %y : tensor<64x256xf32>
  func.return %s, %h : tensor<64x256xf32>, tensor<64x256xf32>
}
