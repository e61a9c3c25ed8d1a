// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena' | filecheck %s
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena{alignment=64 check=true}' | filecheck %s --check-prefix=ALIGN64

// One arena per function; every buffer takes its size rounded up to the alignment
// (default 256) and is live over [first writer, last reader] in work-item ids. Items here:
// 0 = %0, 1 = %1, 2 = %2, 3 = %3 (the broadcast fuses into %3).
//
//   value  bytes  aligned  live
//   %a     1600   1792     [0, 2]   input: from the first item to its last reader
//   %0      400    512     [0, 1]
//   %1        4    256     [1, 3]
//   %2       16    256     [2, 3]
//   %3        4    256     [3, 3]   output (4 x i1): to the function's last item
//
// At items 0 and 1, %a + %0 + %1 = 1792 + 512 + 256 = 2560 bytes are live: the lower
// bound, and the arena size.
//
// %a at [0, 1792); %0 (400 B → 512 B aligned) at [1792, 2304); %1 (4 B → 256 B) above it,
// at [2304, 2560).
// %2 (16 B → 256 B aligned) reuses [1792, 2048) after %0 dies at item 1.
// %3 (4 B → 256 B aligned) takes [2048, 2304), the rest of %0's bytes: %2 holds
// [1792, 2048) and %1 holds [2304, 2560) at item 3. (It cannot take %2's bytes in
// place: 4 x i1 is not the 16 bytes of %2; see in_place.mlir.)

// CHECK-LABEL: func.func @packing(
// CHECK-SAME:      %a: tensor<4x100xf32> {accy.arena = "offset 0 live [0, 2]"}
// CHECK-SAME:      attributes {accy.arena_size = 2560 : i64}
// CHECK-NEXT:    %0 = accy.reduce add %a, dims = [0] {accy.arena = "offset 1792 live [0, 1]"}
// CHECK-NEXT:    %1 = accy.reduce max %0, dims = [0] {accy.arena = "offset 2304 live [1, 3]"}
// CHECK-NEXT:    %2 = accy.reduce add %a, dims = [1] {accy.arena = "offset 1792 live [2, 3]"}
// CHECK-NEXT:    %b = accy.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>{{$}}
// CHECK-NEXT:    %3 = accy.compare GT, %2, %b {accy.arena = "offset 2048 live [3, 3]"}

// With alignment=64 the same intervals pack into 1600 + 448 + 64 = 2112 bytes:
// %a at [0, 1600); %0 (400 B → 448 B aligned) at [1600, 2048); %1 (4 B → 64 B) at
// [2048, 2112). %2 (16 B → 64 B) reuses [1600, 1664) after %0 dies at item 1, and %3
// (4 B → 64 B) takes [1664, 1728).

// ALIGN64-LABEL: func.func @packing(
// ALIGN64-SAME:      %a: tensor<4x100xf32> {accy.arena = "offset 0 live [0, 2]"}
// ALIGN64-SAME:      attributes {accy.arena_size = 2112 : i64}
// ALIGN64-NEXT:    %0 = accy.reduce add %a, dims = [0] {accy.arena = "offset 1600 live [0, 1]"}
// ALIGN64-NEXT:    %1 = accy.reduce max %0, dims = [0] {accy.arena = "offset 2048 live [1, 3]"}
// ALIGN64-NEXT:    %2 = accy.reduce add %a, dims = [1] {accy.arena = "offset 1600 live [2, 3]"}
// ALIGN64:         %3 = accy.compare GT, %2, %b {accy.arena = "offset 1664 live [3, 3]"}
func.func @packing(%a: tensor<4x100xf32>) -> tensor<4xi1> {
  %0 = accy.reduce add %a, dims = [0] : (tensor<4x100xf32>) -> tensor<100xf32>
  %1 = accy.reduce max %0, dims = [0] : (tensor<100xf32>) -> tensor<f32>
  %2 = accy.reduce add %a, dims = [1] : (tensor<4x100xf32>) -> tensor<4xf32>
  %b = accy.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %3 = accy.compare GT, %2, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %3 : tensor<4xi1>
}

// Functions are planned separately and items are numbered across the module: @second
// runs items 4 and 5. Its input is live from its first item (4) even though it is read
// only there; the output %s, written at item 4, stays live until the last item (5). The
// constant goes to the module's constant arena, not to the function's.
//
//   %s [4, 5] → [0, 256); %x [4, 4] → [256, 512); %t [5, 5] reuses [256, 512) after %x
//   dies at item 4. (%t does not take %s's bytes in place: %s is an output, live to
//   the end.)

// CHECK-LABEL: func.func @second(
// CHECK-SAME:      %x: tensor<8xf32> {accy.arena = "offset 256 live [4, 4]"}
// CHECK-SAME:      attributes {accy.arena_size = 512 : i64}
// CHECK-NEXT:    %k = accy.constant {{.*}} {accy.arena = "constant offset 0"}
// CHECK-NEXT:    %s = accy.reduce add %x, dims = [0] {accy.arena = "offset 0 live [4, 5]"}
// CHECK-NEXT:    %t = accy.add %s, %k {accy.arena = "offset 256 live [5, 5]"}
func.func @second(%x: tensor<8xf32>) -> (tensor<f32>, tensor<f32>) {
  %k = accy.constant dense<2.0> : tensor<f32>
  %s = accy.reduce add %x, dims = [0] : (tensor<8xf32>) -> tensor<f32>
  %t = accy.add %s, %k : tensor<f32>
  func.return %s, %t : tensor<f32>, tensor<f32>
}
