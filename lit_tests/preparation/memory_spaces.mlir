// RUN: accy-opt %s -p accy-plan-memory-spaces | filecheck %s

// The seed planner's programs (shared/seeds/accy-preparation-memory.zig). Every slot gets
// `slot N SPACE ACCESS TRANSFER BYTES bytes`, and an output also its source:
// `kernel ITEM` (written by that work item) or `alias SLOT` (an input/constant buffer).

// memory_add4: 3 slots, 48 bytes, all device_global; 2 host inputs, 1 output.
// CHECK-LABEL: func.func @memory_add4(
// CHECK-SAME:      %a: tensor<4xf32> {accy.memory = "slot 0 device_global read_only host_to_device 16 bytes"}
// CHECK-SAME:      %b: tensor<4xf32> {accy.memory = "slot 1 device_global read_only host_to_device 16 bytes"}
// CHECK-NEXT:    %s = accy.add %a, %b {accy.memory = "slot 2 device_global write_only device_to_host 16 bytes kernel 0"}
func.func @memory_add4(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %a, %b : tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// memory_const_add: a constant that is not returned lives in constant memory.
// CHECK-LABEL: func.func @memory_const_add(
// CHECK-SAME:      %x: tensor<4xi32> {accy.memory = "slot 3 device_global read_only host_to_device 16 bytes"}
// CHECK-NEXT:    %k = accy.constant dense<[1, 2, 3, 4]> : tensor<4xi32> {accy.memory = "slot 4 device_constant read_only none 16 bytes"}
// CHECK-NEXT:    %r = accy.add %x, %k {accy.memory = "slot 5 device_global write_only device_to_host 16 bytes kernel 1"}
func.func @memory_const_add(%x: tensor<4xi32>) -> tensor<4xi32> {
  %k = accy.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %r = accy.add %x, %k : tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// backed_outputs: a returned input and a returned constant are aliases of their own slots;
// the returned input is read_write and bidirectional, the constant device_global.
// CHECK-LABEL: func.func @backed_outputs(
// CHECK-SAME:      %in: tensor<2xf32> {accy.memory = "slot 6 device_global read_write bidirectional 8 bytes alias 6"}
// CHECK-NEXT:    %c = accy.constant {{.*}} {accy.memory = "slot 7 device_global write_only device_to_host 8 bytes alias 7"}
func.func @backed_outputs(%in: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %c = accy.constant dense<[3.0, -4.0]> : tensor<2xf32>
  func.return %in, %c : tensor<2xf32>, tensor<2xf32>
}

// writerless (with its writer): the broadcast is work item 2 here.
// CHECK-LABEL: func.func @writerless(
// CHECK-SAME:      %p: tensor<f32> {accy.memory = "slot 8 device_global read_write bidirectional 4 bytes alias 8"}
// CHECK-NEXT:    %v = accy.broadcast_in_dim %p, dims = [] {accy.memory = "slot 9 device_global write_only device_to_host 32 bytes kernel 2"}
func.func @writerless(%p: tensor<f32>) -> (tensor<f32>, tensor<8xf32>) {
  %v = accy.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<8xf32>
  func.return %p, %v : tensor<f32>, tensor<8xf32>
}

// Fused add → mul: the add is elided and gets no slot and no assignment.
// CHECK-LABEL: func.func @memory_fused_add_mul(
// CHECK-NEXT:    %s = accy.add %a, %b : tensor<4xf32>{{$}}
// CHECK-NEXT:    %p = accy.multiply %s, %c {accy.memory = "slot 13 device_global write_only device_to_host 16 bytes kernel 3"}
func.func @memory_fused_add_mul(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %a, %b : tensor<4xf32>
  %p = accy.multiply %s, %c : tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// A dynamic slot has `?` bytes; a temporary is read_write with no transfer; a loop's
// returned result is written by the loop; a scan writes its scratch operand's slot.
// CHECK-LABEL: func.func @loops(
// CHECK-SAME:      %d: tensor<?x3xf32> {accy.memory = "slot 14 device_global read_only host_to_device ? bytes"}
// CHECK-SAME:      %s: tensor<2x3xf32> {accy.memory = "slot 16 device_global read_write bidirectional 24 bytes kernel 7"}
// CHECK-NEXT:    %n = accy.negate %d {accy.memory = "slot 17 device_global write_only device_to_host ? bytes kernel 4"}
// CHECK-NEXT:    %r = accy.iterate 2
// CHECK-NEXT:      %t = accy.tanh %q {accy.memory = "slot 19 device_global read_write none 24 bytes"}
// CHECK-NEXT:      accy.yield %t
// CHECK-NEXT:    } {accy.memory = "slot 18 device_global read_write none 24 bytes"}
// CHECK-NEXT:    %c = accy.scan add %r, %s, dim = 1 : tensor<2x3xf32>{{$}}
func.func @loops(%d: tensor<?x3xf32>, %y: tensor<2x3xf32>, %s: tensor<2x3xf32>) -> (tensor<?x3xf32>, tensor<2x3xf32>) {
  %n = accy.negate %d : tensor<?x3xf32>
  %r = accy.iterate 2 iter_args(%q = %y) : tensor<2x3xf32> {
    %t = accy.tanh %q : tensor<2x3xf32>
    accy.yield %t : tensor<2x3xf32>
  }
  %c = accy.scan add %r, %s, dim = 1 : tensor<2x3xf32>
  func.return %n, %c : tensor<?x3xf32>, tensor<2x3xf32>
}
