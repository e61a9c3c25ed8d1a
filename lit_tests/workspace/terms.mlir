// RUN: accy-opt %s --accy-target=cuda -p 'accy-size-workspaces{rows=1,64 sm-count=100}' | filecheck %s
// RUN: accy-opt %s --accy-target=cuda -p 'accy-size-workspaces{rows=1,64 sm-count=100}' --accy-report=workspaces 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: accy-opt %s --accy-target=cuda -p 'accy-size-workspaces{rows=1}' --accy-report=workspaces 2>&1 >/dev/null | filecheck %s --check-prefix=ONE

// Workspace terms: every work item runs the first kernel family (accy/families/*.toml)
// whose kinds and `when` match; each (family, workspace) is ONE term — one buffer every
// launch of the family shares — sized at the largest value over the family's items, and
// over several plans (rows=1,64) the widest plan's term wins.
//
// Items: 0 = %0, 1 = %1, 2 = %2, 3 = %3, 4 = %4 in @model (dynamic: n = the plan's rows);
// 5 = %0 in @head (static: n = 2, the leading dim of its first parameter).
// k = the last dim of the item's first operand; kept = a reduce's result elements (here
// equal to n: every reduce is a 2-D row reduction of its function's rows; see kept.mlir).
//
// reduce.split (k > 4096): partials = kept * sm_count * 8 * 4, items 0 (k 8192), 1 (k 5000)
// and 5 (k 6000). Item 4 (k 16) runs reduce.row, which has no workspace.
//   rows 1:  items 0, 1: 1 * 100 * 32 = 3200;  item 5: 2 * 100 * 32 = 6400 → 6400
//   rows 64: items 0, 1: 64 * 100 * 32 = 204800 (item 0 first) → the widest: 204800
// scan.multiblock (k > 1024): carries = ceil_div(k, 1024) * n * 4, item 2 (k 3000):
//   rows 1: 3 * 1 * 4 = 12;  rows 64: 3 * 64 * 4 = 768 → 768
// dot.splitk (k > 4096): partials = sm_count * 128 * 128 * 4, item 3 (k 8192):
//   100 * 65536 = 6553600 at both row counts; on a tie the earlier plan (rows 1) stays.

// CHECK:      builtin.module attributes {accy.workspaces = [
// CHECK-SAME:   "dot.splitk partials 6553600 bytes arena nodes [3] rows 1",
// CHECK-SAME:   "reduce.split partials 204800 bytes arena nodes [0, 1, 5] rows 64",
// CHECK-SAME:   "scan.multiblock carries 768 bytes arena nodes [2] rows 64"]}

// REPORT:      workspaces: 3 term(s)
// REPORT-NEXT: family           workspace  bytes    where  nodes    max node  rows
// REPORT-NEXT: dot.splitk       partials   6553600  arena  3        3         1
// REPORT-NEXT: reduce.split     partials   204800   arena  0, 1, 5  0         64
// REPORT-NEXT: scan.multiblock  carries    768      arena  2        2         64
// REPORT-NOT:  {{.}}

// One plan of one row on the default device (sm_count 132): reduce.split's largest
// node is now @head's (kept = n = 2): 2 * 132 * 32 = 8448; dot.splitk 132 * 65536 = 8650752;
// scan.multiblock 3 * 1 * 4 = 12.
// ONE:      workspaces: 3 term(s)
// ONE-NEXT: family           workspace  bytes    where  nodes    max node  rows
// ONE-NEXT: dot.splitk       partials   8650752  arena  3        3         1
// ONE-NEXT: reduce.split     partials   8448     arena  0, 1, 5  5         1
// ONE-NEXT: scan.multiblock  carries    12       arena  2        2         1

func.func @model(%x: tensor<?x8192xf32>, %y: tensor<?x5000xf32>, %z: tensor<?x3000xf32>, %s: tensor<?x3000xf32>, %w: tensor<8192x16xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x3000xf32>, tensor<?x16xf32>, tensor<?xf32>) attributes {accy.dims = {d_model = 768 : i64}} {
  %0 = accy.reduce add %x, dims = [1] : (tensor<?x8192xf32>) -> tensor<?xf32>
  %1 = accy.reduce max %y, dims = [1] : (tensor<?x5000xf32>) -> tensor<?xf32>
  %2 = accy.scan add %z, %s, dim = 1 : tensor<?x3000xf32>
  %3 = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<?x8192xf32>, tensor<8192x16xf32>) -> tensor<?x16xf32>
  %4 = accy.reduce add %3, dims = [1] : (tensor<?x16xf32>) -> tensor<?xf32>
  func.return %0, %1, %2, %3, %4 : tensor<?xf32>, tensor<?xf32>, tensor<?x3000xf32>, tensor<?x16xf32>, tensor<?xf32>
}

func.func @head(%h: tensor<2x6000xf32>) -> tensor<2xf32> {
  %0 = accy.reduce add %h, dims = [1] : (tensor<2x6000xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
