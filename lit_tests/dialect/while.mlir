// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A loop whose trip count depends on data: halve until the greatest element is at most
// the tolerance (the cond holds a reduction).
// CHECK-LABEL: func.func @converge(%x: tensor<4xf32>, %tol: tensor<f32>) -> tensor<4xf32> {
// CHECK-NEXT:    %r = accy.while(%x : tensor<4xf32>) -> (tensor<4xf32>) cond {
// CHECK-NEXT:    ^bb0(%c: tensor<4xf32>):
// CHECK-NEXT:    %m = accy.reduce max %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT:    %more = accy.compare GT, %m, %tol : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:    accy.yield %more : tensor<i1>
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^bb0(%b: tensor<4xf32>):
// CHECK-NEXT:    %half = accy.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK-NEXT:    %next = accy.multiply %b, %half : tensor<4xf32>
// CHECK-NEXT:    accy.yield %next : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r : tensor<4xf32>
// CHECK-NEXT:    }
// GENERIC: %r = "accy.while"(%x)
func.func @converge(%x: tensor<4xf32>, %tol: tensor<f32>) -> tensor<4xf32> {
  %r = accy.while (%x : tensor<4xf32>) -> (tensor<4xf32>) cond {
  ^bb0(%c: tensor<4xf32>):
    %m = accy.reduce max %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
    %more = accy.compare GT, %m, %tol : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %more : tensor<i1>
  } do {
  ^bb0(%b: tensor<4xf32>):
    %half = accy.constant dense<5.000000e-01> : tensor<4xf32>
    %next = accy.multiply %b, %half : tensor<4xf32>
    accy.yield %next : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
