// RUN: accy-opt %s --split-input-file --verify-diagnostics

// A hand-edited planned module that breaks a rule of the plan is refused with a located
// error naming the buffers.

// Two buffers live at the same time overlap in the arena.
func.func @overlap(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned = "cuda"} {
  %arena = accy.arena alignment 16 : memref<64xi8, #accy.space<device_global>>
  %a = accy.view %arena[0] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  // expected-error @+1 {{'accy.view' op %b (bytes [0, 16), live [4, 5]) overlaps %a (bytes [0, 16), live [3, 4]) in the arena while both are live}}
  %b = accy.view %arena[0] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  accy.copy %x to %a : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<device_global>>
  accy.kernel 0 "reduce" ins(%a : memref<4xf32, #accy.space<device_global>>) outs(%b : memref<4xf32, #accy.space<device_global>>) {
  ^bb0(%t: tensor<4xf32>):
    accy.yield %t : tensor<4xf32>
  }
  accy.copy %b to %out0 : memref<4xf32, #accy.space<device_global>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// An out-parameter nothing writes.
// expected-error @+1 {{function @unwritten result #0 (%out0) has no kernel writer or backing alias; schedule its producer or provide an input/constant alias}}
func.func @unwritten(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned = "cpu"} {
  func.return
}

// -----

// A view past the end of its arena.
func.func @outside(%x: memref<4xf32, #accy.space<host>>) attributes {accy.planned = "cuda"} {
  %arena = accy.arena alignment 16 : memref<64xi8, #accy.space<device_global>>
  // expected-error @+1 {{'accy.view' op bytes [64, 80) lie outside the arena of 64 bytes}}
  %a = accy.view %arena[64] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  func.return
}

// -----

// A view at an offset the arena's alignment does not allow.
func.func @misaligned(%x: memref<4xf32, #accy.space<host>>) attributes {accy.planned = "cuda"} {
  %arena = accy.arena alignment 16 : memref<64xi8, #accy.space<device_global>>
  // expected-error @+1 {{'accy.view' op offset 8 is not a multiple of the arena's alignment 16}}
  %a = accy.view %arena[8] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  func.return
}

// -----

// A kernel that writes a constant's buffer.
func.func @writes_constant(%x: memref<4xf32, #accy.space<host>>) attributes {accy.planned = "cuda"} {
  %c = accy.global dense<1.0> : tensor<4xf32> : memref<4xf32, #accy.space<device_constant>>
  // expected-error @+1 {{'accy.kernel' op outs #0 is a read-only constant buffer}}
  accy.kernel 0 "elementwise" ins() outs(%c : memref<4xf32, #accy.space<device_constant>>) {
    %t = accy.constant dense<2.0> : tensor<4xf32>
    accy.yield %t : tensor<4xf32>
  }
  func.return
}

// -----

// A kernel body that does not read what its buffer stores.
func.func @mismatch(%x: memref<4xf32, #accy.space<host>>, %y: memref<8xf32, #accy.space<host>>) attributes {accy.planned = "cpu"} {
  // expected-error @+1 {{'accy.kernel' op body argument #0 of type tensor<8xf32> is not what ins #0 of type memref<4xf32, #accy.space<host>> stores}}
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%y : memref<8xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<8xf32>):
    accy.yield %t : tensor<8xf32>
  }
  func.return
}

// -----

// A dynamic view that does not say how many rows it was planned for.
func.func @unbounded(%x: memref<?x4xf32, #accy.space<host>>) attributes {accy.planned = "cpu"} {
  %arena = accy.arena alignment 16 : memref<256xi8, #accy.space<host>>
  // expected-error @+1 {{'accy.view' op a view of dynamic type memref<?x4xf32, #accy.space<host>> records the rows it was planned for (max_rows)}}
  %a = accy.view %arena[0] : memref<256xi8, #accy.space<host>> to memref<?x4xf32, #accy.space<host>>
  func.return
}

// -----

// A dynamic view past the end of its arena at the rows it was planned for.
func.func @rows_outside(%x: memref<?x4xf32, #accy.space<host>>) attributes {accy.planned = "cpu"} {
  %arena = accy.arena alignment 16 : memref<256xi8, #accy.space<host>>
  // expected-error @+1 {{'accy.view' op bytes [0, 1024) lie outside the arena of 256 bytes}}
  %a = accy.view %arena[0] max_rows 64 : memref<256xi8, #accy.space<host>> to memref<?x4xf32, #accy.space<host>>
  func.return
}
