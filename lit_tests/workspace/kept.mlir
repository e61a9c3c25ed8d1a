// RUN: accy-opt %s --accy-target=cuda -p 'accy-size-workspaces{rows=10 sm-count=100}' --accy-report=workspaces 2>&1 >/dev/null | filecheck %s
// RUN: accy-opt %s --accy-target=cuda --split-input-file -p 'accy-size-workspaces{rows=10 sm-count=100}' 2>&1 | filecheck %s --check-prefix=EACH
// RUN: not accy-opt %s --accy-target=cuda -p 'accy-size-workspaces{sm-count=100}' 2>&1 | filecheck %s --check-prefix=NOROWS

// reduce.split's partials hold one 4-byte partial per KEPT row (a result element of the
// reduce) and phase-1 block (sm_count * 8): kept * sm_count * 8 * 4 bytes, whatever the
// plan's rows `n` (the leading dim of the first parameter of a static function) are.
//
// @total: a full sum of 10**8 elements keeps 1 row: 1 * 100 * 32 = 3200 (n = 10**8).
// @cube:  dims = [0] of 5000x3x5000 keeps 3 * 5000 rows: 15000 * 3200 = 48000000 (n = 5000).
// @second: the reduced operand is the second parameter: kept 64 (n = 2): 204800.
// @inner: dims = [0, 2] of 64x3x8192 keeps 3 rows: 9600 (n = 64).
// @batch: dims = [2] of ?x3x8192 at rows = 10 keeps 10 * 3 rows: 96000 (n = 10).
// One term for the family: the largest node's, @cube's (item 1), in the plan of rows 10.

// CHECK:      workspaces: 1 term(s)
// CHECK-NEXT: family        workspace  bytes     where  nodes          max node  rows
// CHECK-NEXT: reduce.split  partials   48000000  arena  0, 1, 2, 3, 4  1         10
// CHECK-NOT:  {{.}}

// Without rows, @batch's kept rows are unknown: an error that says so, never 0.
// NOROWS: kept.mlir:59:3: error: family 'reduce.split' workspace 'partials': at column 1: unknown name 'kept'; @batch has dynamic dims, so `kept` (a dynamic dim is kept here) needs the row count to plan for: give rows

// EACH: accy.workspaces = ["reduce.split partials 3200 bytes arena nodes [0] rows 10"]
// EACH: accy.workspaces = ["reduce.split partials 48000000 bytes arena nodes [0] rows 10"]
// EACH: accy.workspaces = ["reduce.split partials 204800 bytes arena nodes [0] rows 10"]
// EACH: accy.workspaces = ["reduce.split partials 9600 bytes arena nodes [0] rows 10"]
// EACH: accy.workspaces = ["reduce.split partials 96000 bytes arena nodes [0] rows 10"]

func.func @total(%x: tensor<100000000xf32>) -> tensor<f32> {
  %0 = accy.reduce add %x, dims = [0] : (tensor<100000000xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @cube(%x: tensor<5000x3x5000xf32>) -> tensor<3x5000xf32> {
  %0 = accy.reduce add %x, dims = [0] : (tensor<5000x3x5000xf32>) -> tensor<3x5000xf32>
  func.return %0 : tensor<3x5000xf32>
}

// -----

func.func @second(%s: tensor<2xf32>, %x: tensor<64x8192xf32>) -> tensor<64xf32> {
  %0 = accy.reduce add %x, dims = [1] : (tensor<64x8192xf32>) -> tensor<64xf32>
  func.return %0 : tensor<64xf32>
}

// -----

func.func @inner(%x: tensor<64x3x8192xf32>) -> tensor<3xf32> {
  %0 = accy.reduce add %x, dims = [0, 2] : (tensor<64x3x8192xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @batch(%x: tensor<?x3x8192xf32>) -> tensor<?x3xf32> {
  %0 = accy.reduce add %x, dims = [2] : (tensor<?x3x8192xf32>) -> tensor<?x3xf32>
  func.return %0 : tensor<?x3xf32>
}
