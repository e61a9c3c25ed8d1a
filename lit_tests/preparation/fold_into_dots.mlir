// A transpose feeding a product becomes part of its dimension numbers (the product reads
// the operand in place), and so does a broadcast that only adds batch dims; a transpose of
// a product that swaps its free dims becomes the product of the swapped operands. Folds
// keep the product's contiguous form and the result's order.
//
// RUN: accy-opt %s -p accy-fold-into-dots | filecheck %s

// q @ k.T: the rhs transpose folds, and both operands are read along K.
// CHECK-LABEL: func.func @scores
// CHECK-NEXT:    %s = accy.dot_general %q, %k, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<8x4xf32>, tensor<6x4xf32>) -> tensor<8x6xf32>
// CHECK-NEXT:    func.return %s
func.func @scores(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>) -> tensor<8x6xf32> {
  %kt = accy.transpose %k, dims = [1, 0] : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %s = accy.dot_general %q, %kt, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  func.return %s : tensor<8x6xf32>
}

// Heads split by a transpose: the batch and contracting dims move, the free dim stays.
// The transpose also returned stays, for that use.
// CHECK-LABEL: func.func @heads
// CHECK-NEXT:    %qt = accy.transpose %q, dims = [1, 0, 2]
// CHECK-NEXT:    %s = accy.dot_general %q, %k, batching_dims = [1] x [1], contracting_dims = [2] x [2] : (tensor<5x2x4xf32>, tensor<5x2x4xf32>) -> tensor<2x5x5xf32>
// CHECK-NEXT:    func.return %s, %qt
func.func @heads(%q: tensor<5x2x4xf32>, %k: tensor<5x2x4xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x4xf32>) {
  %qt = accy.transpose %q, dims = [1, 0, 2] : (tensor<5x2x4xf32>) -> tensor<2x5x4xf32>
  %kt = accy.transpose %k, dims = [1, 0, 2] : (tensor<5x2x4xf32>) -> tensor<2x5x4xf32>
  %s = accy.dot_general %qt, %kt, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x5xf32>
  func.return %s, %qt : tensor<2x5x5xf32>, tensor<2x5x4xf32>
}

// A gradient's (x.T @ g).T is g.T @ x: the result transpose folds by swapping operands.
// CHECK-LABEL: func.func @gradient
// CHECK-NEXT:    %t = accy.dot_general %g, %x, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<32x10xf32>, tensor<32x12xf32>) -> tensor<10x12xf32>
// CHECK-NEXT:    func.return %t
func.func @gradient(%x: tensor<32x12xf32>, %g: tensor<32x10xf32>) -> tensor<10x12xf32> {
  %d = accy.dot_general %x, %g, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<32x12xf32>, tensor<32x10xf32>) -> tensor<12x10xf32>
  %t = accy.transpose %d, dims = [1, 0] : (tensor<12x10xf32>) -> tensor<10x12xf32>
  func.return %t : tensor<10x12xf32>
}

// Left alone: a transpose that would reorder the free dims (they order the result), a
// result transpose that moves a batch dim, and a fold that would lose the product's
// contiguous form (the rhs read along N becomes read along neither N nor K).
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %xt = accy.transpose
// CHECK-NEXT:    %a = accy.dot_general %xt, %w
// CHECK-NEXT:    %b = accy.dot_general %y, %z
// CHECK-NEXT:    %bt = accy.transpose %b
// CHECK-NEXT:    %wt = accy.transpose %w
// CHECK-NEXT:    %c = accy.dot_general %v, %wt
func.func @kept(%x: tensor<3x2x4xf32>, %w: tensor<4x6xf32>, %y: tensor<2x3x4xf32>, %z: tensor<2x4x5xf32>, %v: tensor<6x3xf32>) -> (tensor<2x3x6xf32>, tensor<3x2x5xf32>, tensor<3x4xf32>) {
  %xt = accy.transpose %x, dims = [1, 0, 2] : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  %a = accy.dot_general %xt, %w, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
  %b = accy.dot_general %y, %z, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %bt = accy.transpose %b, dims = [1, 0, 2] : (tensor<2x3x5xf32>) -> tensor<3x2x5xf32>
  %wt = accy.transpose %w, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %c = accy.dot_general %v, %wt, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
  func.return %a, %bt, %c : tensor<2x3x6xf32>, tensor<3x2x5xf32>, tensor<3x4xf32>
}

// Weights broadcast over a batch: the product reads them once, the batch a free dim.
// CHECK-LABEL: func.func @shared_weights
// CHECK-NEXT:    %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x5x4xf32>, tensor<4x6xf32>) -> tensor<2x5x6xf32>
// CHECK-NEXT:    func.return %y
func.func @shared_weights(%x: tensor<2x5x4xf32>, %w: tensor<4x6xf32>) -> tensor<2x5x6xf32> {
  %wb = accy.broadcast_in_dim %w, dims = [1, 2] : (tensor<4x6xf32>) -> tensor<2x4x6xf32>
  %y = accy.dot_general %x, %wb, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x5x4xf32>, tensor<2x4x6xf32>) -> tensor<2x5x6xf32>
  func.return %y : tensor<2x5x6xf32>
}

// Left alone: a broadcast of the lhs (its batch dim would follow the lhs's free dim in
// the result) and one that stretches a dim of size 1.
// CHECK-LABEL: func.func @kept_broadcasts
// CHECK-NEXT:    %xb = accy.broadcast_in_dim
// CHECK-NEXT:    %a = accy.dot_general %xb, %v
// CHECK-NEXT:    %wb = accy.broadcast_in_dim
// CHECK-NEXT:    %b = accy.dot_general %y, %wb
func.func @kept_broadcasts(%x: tensor<5x4xf32>, %v: tensor<2x4x6xf32>, %y: tensor<2x5x4xf32>, %w: tensor<1x4x6xf32>) -> (tensor<2x5x6xf32>, tensor<2x5x6xf32>) {
  %xb = accy.broadcast_in_dim %x, dims = [1, 2] : (tensor<5x4xf32>) -> tensor<2x5x4xf32>
  %a = accy.dot_general %xb, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x5x4xf32>, tensor<2x4x6xf32>) -> tensor<2x5x6xf32>
  %wb = accy.broadcast_in_dim %w, dims = [0, 1, 2] : (tensor<1x4x6xf32>) -> tensor<2x4x6xf32>
  %b = accy.dot_general %y, %wb, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x5x4xf32>, tensor<2x4x6xf32>) -> tensor<2x5x6xf32>
  func.return %a, %b : tensor<2x5x6xf32>, tensor<2x5x6xf32>
}

// Attention's probs . v as JAX writes it: v first (contracting along its rows, free along
// its head dim), the heads put back by a transpose. That product has no contiguous form;
// with the operands swapped it has one (v's head dim is N, last), so it becomes the
// swapped product and a transpose that keeps the head dim last.
// CHECK-LABEL: func.func @probs_values
// CHECK-NEXT:    %{{.*}} = accy.dot_general %w, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1] : (tensor<1x2x6x6xf32>, tensor<1x6x2x8xf32>) -> tensor<1x2x6x8xf32>
// CHECK-NEXT:    %{{.*}} = accy.transpose %{{.*}}, dims = [0, 2, 1, 3] : (tensor<1x2x6x8xf32>) -> tensor<1x6x2x8xf32>
// CHECK-NEXT:    func.return
func.func @probs_values(%w: tensor<1x2x6x6xf32>, %v: tensor<1x6x2x8xf32>) -> tensor<1x6x2x8xf32> {
  %o = accy.dot_general %v, %w, batching_dims = [0, 2] x [0, 1], contracting_dims = [1] x [3] : (tensor<1x6x2x8xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x8x6xf32>
  %t = accy.transpose %o, dims = [0, 3, 1, 2] : (tensor<1x2x8x6xf32>) -> tensor<1x6x2x8xf32>
  func.return %t : tensor<1x6x2x8xf32>
}
