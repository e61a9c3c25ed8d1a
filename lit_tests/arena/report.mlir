// RUN: accy-opt %s --accy-target=cuda --accy-report=arena 2>&1 >/dev/null | filecheck %s
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena' --accy-report=arena 2>&1 >/dev/null | filecheck %s
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena{alignment=64}' --accy-report=arena 2>&1 >/dev/null | filecheck %s --check-prefix=ALIGN64

// The arena report (stderr): per function a summary, in bytes — the arena size, the lower
// bound (the most bytes live at one work item), the sum of the aligned buffer sizes, size /
// lower bound, the packed size of the temporaries alone (not parameters, results,
// constants, nor temporaries a result reuses in place; workspaces included; XLA's
// temp_size_in_bytes) — then one row per buffer: its slot, role,
// placement, unaligned bytes and live interval. Workspace buffers follow, named
// FAMILY.WORKSPACE. The report plans what is missing, so it needs no pass.

// @report (items 0..3; the program of packing.mlir): %a 1600 B → 1792, %0 400 B → 512,
// %1, %2, %3 → 256 each.
//   sum of sizes = 1792 + 512 + 3 * 256 = 3072
//   lower bound  = at items 0 and 1: %a + %0 + %1 = 1792 + 512 + 256 = 2560 = size
//   temporaries  = %0 / %2 share [1792, 2304), %1 above: 512 + 256 = 768
// CHECK:      arena of @report: 2560 bytes; lower bound 2560 bytes (most bytes live at one work item); sum of aligned sizes 3072 bytes; size / lower bound 1.000; temporaries alone would pack into 768 bytes (buffers neither parameters, results nor constants, nor reused in place by a result, nor held in a result's out-parameter before it is written; workspaces included); 0 dynamic slot(s) allocated separately
// CHECK-NEXT: buffer  role       placement    bytes  live
// CHECK-NEXT: 0       input      offset 0     1600   [0, 2]
// CHECK-NEXT: 1       temporary  offset 1792  400    [0, 1]
// CHECK-NEXT: 2       temporary  offset 2304  4      [1, 3]
// CHECK-NEXT: 3       temporary  offset 1792  16     [2, 3]
// CHECK-NEXT: 4       output     offset 2048  4      [3, 3]

// ALIGN64:      arena of @report: 2112 bytes; lower bound 2112 bytes (most bytes live at one work item); sum of aligned sizes 2240 bytes; size / lower bound 1.000; temporaries alone would pack into 512 bytes (buffers neither parameters, results nor constants, nor reused in place by a result, nor held in a result's out-parameter before it is written; workspaces included); 0 dynamic slot(s) allocated separately
// ALIGN64-NEXT: buffer  role       placement    bytes  live
// ALIGN64-NEXT: 0       input      offset 0     1600   [0, 2]
// ALIGN64-NEXT: 1       temporary  offset 1600  400    [0, 1]
// ALIGN64-NEXT: 2       temporary  offset 2048  4      [1, 3]
// ALIGN64-NEXT: 3       temporary  offset 1600  16     [2, 3]
// ALIGN64-NEXT: 4       output     offset 1664  4      [3, 3]
func.func @report(%a: tensor<4x100xf32>) -> tensor<4xi1> {
  %0 = accy.reduce add %a, dims = [0] : (tensor<4x100xf32>) -> tensor<100xf32>
  %1 = accy.reduce max %0, dims = [0] : (tensor<100xf32>) -> tensor<f32>
  %2 = accy.reduce add %a, dims = [1] : (tensor<4x100xf32>) -> tensor<4xf32>
  %b = accy.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %3 = accy.compare GT, %2, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %3 : tensor<4xi1>
}

// @wide (items 4, 5): a reduction of 8192-wide rows runs reduce.split, whose partials
// (kept * sm_count * 8 * 4 = 2 * 132 * 32 = 8448 B, kept the rows the reduce keeps) live in the
// arena over the items of the family, [4, 4]. %t (slot 8) takes %s's buffer in place
// (same offset); the constant %k is in the constant arena (one 256-byte unit).
//   %w 65536 B at [0, 65536); partials 8448 → 8448 (33 * 256) at [65536, 73984);
//   %s at [73984, 74240), live [4, 5], shared with %t live [5, 5]: 74240 bytes.
// CHECK:      arena of @wide: 74240 bytes; lower bound 74240 bytes {{.*}}; 0 dynamic slot(s) allocated separately
// CHECK-NEXT: buffer                 role       placement                   bytes  live
// CHECK-NEXT: 5                      input      offset 0                    65536  [4, 4]
// CHECK-NEXT: 6                      constant   constant offset 0           8      [4, 5]
// CHECK-NEXT: 7                      temporary  offset 73984                8      [4, 5]
// CHECK-NEXT: 8                      output     offset 73984 reuses slot 7  8      [5, 5]
// CHECK-NEXT: reduce.split.partials  workspace  offset 65536                8448   [4, 4]
// CHECK-NEXT: constant arena: 256 bytes
// CHECK-NOT:  {{.}}
func.func @wide(%w: tensor<2x8192xf32>) -> tensor<2xf32> {
  %k = accy.constant dense<1.0> : tensor<2xf32>
  %s = accy.reduce add %w, dims = [1] : (tensor<2x8192xf32>) -> tensor<2xf32>
  %n = accy.negate %s : tensor<2xf32>
  %t = accy.add %n, %k : tensor<2xf32>
  func.return %t : tensor<2xf32>
}
