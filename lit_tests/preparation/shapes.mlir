// RUN: accy-opt %s -p accy-plan-shapes | filecheck %s

// Every function argument and op result gets its byte size and row-major strides (in
// elements); a dynamic dim makes the size `?` and the strides left of it `?`.

// CHECK-LABEL: func.func @static(
// CHECK-SAME:      %x: tensor<2x3x4xf32> {accy.layout = "96 bytes, strides [12, 4, 1]"}
// CHECK-SAME:      %s: tensor<f32> {accy.layout = "4 bytes, strides []"}
// CHECK-NEXT:    %b = accy.broadcast_in_dim %s, dims = [] {accy.layout = "96 bytes, strides [12, 4, 1]"}
// CHECK-NEXT:    %y = accy.add %x, %b {accy.layout = "96 bytes, strides [12, 4, 1]"}
// CHECK-NEXT:    %f = accy.reshape %y {accy.layout = "96 bytes, strides [1]"}
// CHECK-NEXT:    %h = accy.convert %f {accy.layout = "48 bytes, strides [1]"}
// CHECK-NEXT:    %k = accy.constant dense<1> : tensor<3xi32> {accy.layout = "12 bytes, strides [1]"}
// CHECK-NEXT:    func.return
func.func @static(%x: tensor<2x3x4xf32>, %s: tensor<f32>) -> (tensor<24xf16>, tensor<3xi32>) {
  %b = accy.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x3x4xf32>
  %y = accy.add %x, %b : tensor<2x3x4xf32>
  %f = accy.reshape %y : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %h = accy.convert %f : (tensor<24xf32>) -> tensor<24xf16>
  %k = accy.constant dense<1> : tensor<3xi32>
  func.return %h, %k : tensor<24xf16>, tensor<3xi32>
}

// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME:      %d: tensor<4x?x3xi32> {accy.layout = "? bytes, strides [?, 3, 1]"}
// CHECK-NEXT:    %r = accy.reduce add %d, dims = [2] {accy.layout = "? bytes, strides [?, 1]"}
// CHECK-NEXT:    %t = accy.reduce max %d, dims = [1] {accy.layout = "48 bytes, strides [3, 1]"}
func.func @dynamic(%d: tensor<4x?x3xi32>) -> (tensor<4x?xi32>, tensor<4x3xi32>) {
  %r = accy.reduce add %d, dims = [2] : (tensor<4x?x3xi32>) -> tensor<4x?xi32>
  %t = accy.reduce max %d, dims = [1] : (tensor<4x?x3xi32>) -> tensor<4x3xi32>
  func.return %r, %t : tensor<4x?xi32>, tensor<4x3xi32>
}

// Loop results are op results (annotated); the body's block
// arguments are not function arguments and carry no attribute.
// CHECK-LABEL: func.func @loop(
// CHECK-SAME:      %a: tensor<5xf32> {accy.layout = "20 bytes, strides [1]"}
// CHECK:         accy.iterate 2 iter_args(%p = %a) : tensor<5xf32> {
// CHECK-NEXT:      %n = accy.negate %p {accy.layout = "20 bytes, strides [1]"}
// CHECK:         } {accy.layout = "20 bytes, strides [1]"}
func.func @loop(%a: tensor<5xf32>) -> tensor<5xf32> {
  %r = accy.iterate 2 iter_args(%p = %a) : tensor<5xf32> {
    %n = accy.negate %p : tensor<5xf32>
    accy.yield %n : tensor<5xf32>
  }
  func.return %r : tensor<5xf32>
}
