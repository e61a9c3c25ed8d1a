// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena' | filecheck %s --check-prefix=SEPARATE
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena{rows=64,100 check=true}' | filecheck %s --check-prefix=ROWS
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena{rows=100,64}' | filecheck %s --check-prefix=ROWS
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena{rows=1}' | filecheck %s --check-prefix=ONE
// RUN: accy-opt %s --accy-target=cuda -p 'accy-plan-arena{rows=64,100}' --accy-report=arena 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// Dynamic slots (%a and %n, ? x 3 x f32). Items: 0 = %m (with %e fused), 1 = %n,
// 2 = %r. %r takes %m's buffer in place (12 B each, %m dies at item 2).

// Without rows they stay out of the arena, allocated on their own: the arena holds only
// %w [0, 256) and %m / %r [256, 512).
// SEPARATE-LABEL: func.func @dynamic(
// SEPARATE-SAME:      %a: tensor<?x3xf32> {accy.arena = "separate live [0, 1]"}
// SEPARATE-SAME:      %w: tensor<3xf32> {accy.arena = "offset 0 live [0, 2]"}
// SEPARATE-SAME:      attributes {accy.arena_size = 512 : i64}
// SEPARATE:         %m = accy.reduce max %e, dims = [0] {accy.arena = "offset 256 live [0, 2]"}
// SEPARATE-NEXT:    %n = accy.negate %a {accy.arena = "separate live [1, 2]"}
// SEPARATE-NEXT:    %r = accy.add %m, %w {accy.arena = "offset 256 live [2, 2] reuses slot 2"}

// With rows they are planned at the largest row count, whatever the order: 100 rows x
// 3 x 4 B = 1200 B → 1280 B aligned. All four buffers are live at item 1:
//   %a [0, 1280); %n [1280, 2560); %w [2560, 2816); %m / %r [2816, 3072).
// ROWS-LABEL: func.func @dynamic(
// ROWS-SAME:      %a: tensor<?x3xf32> {accy.arena = "offset 0 live [0, 1]"}
// ROWS-SAME:      %w: tensor<3xf32> {accy.arena = "offset 2560 live [0, 2]"}
// ROWS-SAME:      attributes {accy.arena_size = 3072 : i64}
// ROWS:         %m = accy.reduce max %e, dims = [0] {accy.arena = "offset 2816 live [0, 2]"}
// ROWS-NEXT:    %n = accy.negate %a {accy.arena = "offset 1280 live [1, 2]"}
// ROWS-NEXT:    %r = accy.add %m, %w {accy.arena = "offset 2816 live [2, 2] reuses slot 2"}

// At one row every buffer is 12 B → 256 B: 4 x 256 = 1024 bytes.
// ONE-LABEL: func.func @dynamic(
// ONE-SAME:      attributes {accy.arena_size = 1024 : i64}
// ONE-NOT:       separate

// REPORT:      arena of @dynamic: 3072 bytes; lower bound 3072 bytes (most bytes live at one work item); sum of aligned sizes 3072 bytes; size / lower bound 1.000; temporaries alone would pack into 0 bytes (buffers neither parameters, results nor constants, nor reused in place by a result, nor held in a result's out-parameter before it is written; workspaces included); dynamic slots planned at rows=100
// REPORT-NEXT: buffer  role       placement                  bytes  live
// REPORT-NEXT: 0       input      offset 0                   1200   [0, 1]
// REPORT-NEXT: 1       input      offset 2560                12     [0, 2]
// REPORT-NEXT: 2       temporary  offset 2816                12     [0, 2]
// REPORT-NEXT: 3       output     offset 1280                1200   [1, 2]
// REPORT-NEXT: 4       output     offset 2816 reuses slot 2  12     [2, 2]
func.func @dynamic(%a: tensor<?x3xf32>, %w: tensor<3xf32>) -> (tensor<?x3xf32>, tensor<3xf32>) {
  %e = accy.exponential %a : tensor<?x3xf32>
  %m = accy.reduce max %e, dims = [0] : (tensor<?x3xf32>) -> tensor<3xf32>
  %n = accy.negate %a : tensor<?x3xf32>
  %r = accy.add %m, %w : tensor<3xf32>
  func.return %n, %r : tensor<?x3xf32>, tensor<3xf32>
}
