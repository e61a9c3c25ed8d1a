// RUN: accy-opt %s -p accy-plan-buffers | filecheck %s

// Slots are numbered across the module: per function its arguments first, then the
// results work items leave in storage and the constants, in pre-order. Fused-away values
// get no slot. A returned value's slot is an output.

// CHECK-LABEL: func.func @memory_fused_add_mul(
// CHECK-SAME:      %a: tensor<4xf32> {accy.slot = "slot 0 input 16 bytes"}
// CHECK-SAME:      %b: tensor<4xf32> {accy.slot = "slot 1 input 16 bytes"}
// CHECK-SAME:      %c: tensor<4xf32> {accy.slot = "slot 2 input 16 bytes"}
// CHECK-NEXT:    %s = accy.add %a, %b : tensor<4xf32>{{$}}
// CHECK-NEXT:    %p = accy.multiply %s, %c {accy.slot = "slot 3 output 16 bytes"}
func.func @memory_fused_add_mul(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %a, %b : tensor<4xf32>
  %p = accy.multiply %s, %c : tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// Constants are slots of their own; a returned parameter is input+output, a returned
// constant output+constant; a dynamic shape has an unknown size.
// CHECK-LABEL: func.func @roles(
// CHECK-SAME:      %x: tensor<4xi32> {accy.slot = "slot 4 input+output 16 bytes"}
// CHECK-SAME:      %d: tensor<?x3xf32> {accy.slot = "slot 5 input ? bytes"}
// CHECK-NEXT:    %k = accy.constant dense<[1, 2, 3, 4]> : tensor<4xi32> {accy.slot = "slot 6 constant 16 bytes"}
// CHECK-NEXT:    %r = accy.add %x, %k {accy.slot = "slot 7 output 16 bytes"}
// CHECK-NEXT:    %back = accy.constant {{.*}} {accy.slot = "slot 8 output+constant 8 bytes"}
// CHECK-NEXT:    %n = accy.negate %d {accy.slot = "slot 9 output ? bytes"}
// CHECK-NEXT:    %m = accy.reduce max %n, dims = [0] {accy.slot = "slot 10 temporary 12 bytes"}
// CHECK-NEXT:    %o = accy.negate %m {accy.slot = "slot 11 output 12 bytes"}
func.func @roles(%x: tensor<4xi32>, %d: tensor<?x3xf32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<2xf32>, tensor<?x3xf32>, tensor<3xf32>) {
  %k = accy.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %r = accy.add %x, %k : tensor<4xi32>
  %back = accy.constant dense<[3.0, -4.0]> : tensor<2xf32>
  %n = accy.negate %d : tensor<?x3xf32>
  %m = accy.reduce max %n, dims = [0] : (tensor<?x3xf32>) -> tensor<3xf32>
  %o = accy.negate %m : tensor<3xf32>
  func.return %x, %r, %back, %n, %o : tensor<4xi32>, tensor<4xi32>, tensor<2xf32>, tensor<?x3xf32>, tensor<3xf32>
}

// A loop's results get slots (its body's block arguments share them); a scan writes
// into its scratch operand's slot and gets none of its own.
// CHECK-LABEL: func.func @loop(
// CHECK-SAME:      %x: tensor<2x3xf32> {accy.slot = "slot 12 input 24 bytes"}
// CHECK-SAME:      %y: tensor<2x3xf32> {accy.slot = "slot 13 input 24 bytes"}
// CHECK-SAME:      %s: tensor<2x3xf32> {accy.slot = "slot 14 input+output 24 bytes"}
// CHECK-NEXT:    accy.iterate 4
// CHECK-NEXT:      %p2 = accy.add %p, %q : tensor<2x3xf32>{{$}}
// CHECK-NEXT:      %t = accy.tanh %p2 {accy.slot = "slot 17 temporary 24 bytes"}
// CHECK-NEXT:      accy.yield
// CHECK-NEXT:    } {accy.slot = ["slot 15 temporary 24 bytes", "slot 16 output 24 bytes"]}
// CHECK-NEXT:    %c = accy.scan add %r, %s, dim = 1 : tensor<2x3xf32>{{$}}
// CHECK-NEXT:    func.return
func.func @loop(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %r:2 = accy.iterate 4 iter_args(%p = %x, %q = %y) : tensor<2x3xf32>, tensor<2x3xf32> {
    %p2 = accy.add %p, %q : tensor<2x3xf32>
    %t = accy.tanh %p2 : tensor<2x3xf32>
    accy.yield %t, %q : tensor<2x3xf32>, tensor<2x3xf32>
  }
  %c = accy.scan add %r#0, %s, dim = 1 : tensor<2x3xf32>
  func.return %c, %r#1 : tensor<2x3xf32>, tensor<2x3xf32>
}
