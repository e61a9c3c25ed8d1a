// A value a loop body yields unchanged (the weights JAX's lax.scan carries) is read from
// its init; the loop carries the others only. The StableHLO importer does the same.
//
// RUN: accy-opt %s -p accy-drop-loop-invariants | filecheck %s

// CHECK-LABEL: func.func @scan
// CHECK-NEXT:    %r = accy.iterate 3 iter_args(%h = %h0) : tensor<4xf32> {
// CHECK-NEXT:      %n = accy.multiply %h, %w0 : tensor<4xf32>
// CHECK-NEXT:      accy.yield %n : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %w0
func.func @scan(%w0: tensor<4xf32>, %h0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %wr, %r = accy.iterate 3 iter_args(%w = %w0, %h = %h0) : tensor<4xf32>, tensor<4xf32> {
    %n = accy.multiply %h, %w : tensor<4xf32>
    accy.yield %w, %n : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r, %wr : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @converge
// CHECK-NEXT:    %r = accy.while(%x : tensor<4xf32>) -> (tensor<4xf32>) cond {
// CHECK-NEXT:    ^bb0(%c: tensor<4xf32>):
// CHECK-NEXT:      %m = accy.reduce max %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT:      %more = accy.compare GT, %m, %tol0 : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         } do {
// CHECK-NEXT:    ^bb0(%b: tensor<4xf32>):
// CHECK-NEXT:      %next = accy.multiply %b, %half0 : tensor<4xf32>
// CHECK-NEXT:      accy.yield %next : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
func.func @converge(%x: tensor<4xf32>, %tol0: tensor<f32>, %half0: tensor<4xf32>) -> tensor<4xf32> {
  %r, %t, %h = accy.while (%x, %tol0, %half0 : tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>, tensor<4xf32>) cond {
  ^bb0(%c: tensor<4xf32>, %tol: tensor<f32>, %ch: tensor<4xf32>):
    %m = accy.reduce max %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
    %more = accy.compare GT, %m, %tol : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %more : tensor<i1>
  } do {
  ^bb0(%b: tensor<4xf32>, %bt: tensor<f32>, %half: tensor<4xf32>):
    %next = accy.multiply %b, %half : tensor<4xf32>
    accy.yield %next, %bt, %half : tensor<4xf32>, tensor<f32>, tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
