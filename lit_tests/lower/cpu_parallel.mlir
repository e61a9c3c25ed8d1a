// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | %mlir-check --threads 2 | filecheck %s --check-prefix=ASYNC
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | %mlir-check | filecheck %s --check-prefix=SEQ

// Which loops run in parallel. A nest whose iterations write disjoint elements takes its
// outer dims (all but the contiguous last one, or the only one; of those, the fewest
// giving PARALLEL_TASKS = 32 iterations) as one one-dimensional `scf.parallel` over their
// iterations (each dim's index divided out inside) when it does at least 32768 scalar
// steps (PARALLEL_MIN_WORK); smaller nests stay `scf.for`s. Work per nest:
//   @rows:   exp over 256 x 512          = 131072 steps  -> parallel rows, sequential columns
//   @small:  exp over 64 x 64            =   4096 steps  -> sequential
//   @flat:   add over 65536              =  65536 steps  -> the only dim is parallel
//   @rowsum: reduce 128 rows of 512      = 128 x 512 = 65536 steps -> parallel rows, each
//            row summed by a sequential `scf.for` carrying the accumulator
//   @total:  reduce all 65536 elements   -> no kept dim and one chunk (REDUCE_CHUNK =
//            65536 elements): sequential blocked loops (16 x 16 partials of 256 elements)
//   @split:  reduce 4 rows of 1048576    -> fewer than 256 rows, 16 chunks per row: the
//            chunks in parallel into the planned partials workspace (reduce.chunks), then each row's 16 partials
//   @mm:     64x128 @ 128x256 in f32 register tiles (`_dot_tiles`): 64 x 128 x 256 =
//            2097152 steps -> every tile in parallel

func.func @rows(%x: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %e = accy.exponential %x : tensor<256x512xf32>
  return %e : tensor<256x512xf32>
}
// CHECK-LABEL: func.func @accy_fn_rows
// CHECK:       "scf.parallel"(%{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
// CHECK-NEXT:  ^{{.*}}(%[[I:.*]]: index):
// CHECK:         scf.for %[[J:.*]] = {{.*}} {
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
// CHECK:         scf.reduce

func.func @small(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = accy.exponential %x : tensor<64x64xf32>
  return %e : tensor<64x64xf32>
}
// CHECK-LABEL: func.func @accy_fn_small
// CHECK-NOT:   scf.parallel
// CHECK:       scf.for
// CHECK-NOT:   scf.parallel
// CHECK:       func.return

func.func @flat(%a: tensor<65536xf32>, %b: tensor<65536xf32>) -> tensor<65536xf32> {
  %s = accy.add %a, %b : tensor<65536xf32>
  return %s : tensor<65536xf32>
}
// CHECK-LABEL: func.func @accy_fn_flat
// CHECK:       "scf.parallel"
// CHECK-NOT:   scf.for
// CHECK:       arith.addf
// CHECK:       scf.reduce

func.func @rowsum(%x: tensor<128x512xf32>) -> tensor<128xf32> {
  %r = accy.reduce add %x, dims = [1] : (tensor<128x512xf32>) -> tensor<128xf32>
  return %r : tensor<128xf32>
}
// CHECK-LABEL: func.func @accy_fn_rowsum
// CHECK:       "scf.parallel"
// CHECK:         scf.for {{.*}} iter_args
// CHECK:           arith.addf {{.*}} fastmath<reassoc>
// CHECK:         memref.store
// CHECK:         scf.reduce

func.func @total(%x: tensor<65536xf32>) -> tensor<f32> {
  %r = accy.reduce add %x, dims = [0] : (tensor<65536xf32>) -> tensor<f32>
  return %r : tensor<f32>
}
// CHECK-LABEL: func.func @accy_fn_total
// CHECK-DAG:   %[[C4096:.*]] = arith.constant 4096 : index
// CHECK-DAG:   %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT:   scf.parallel
// Each loop carries its own accumulator from zero: 16 partials of 16 partials of sums of
// 256 consecutive elements (the innermost vectorizable, `reassoc`), combined in order.
// CHECK:       scf.for {{.*}} step %[[C4096]] iter_args(%{{.*}} = %[[ZERO]])
// CHECK:         scf.for {{.*}} step %[[C256]] iter_args(%{{.*}} = %[[ZERO]])
// CHECK:           scf.for {{.*}} step %[[C1]] iter_args(%{{.*}} = %[[ZERO]])
// CHECK:             arith.addf {{.*}} fastmath<reassoc>
// CHECK:           arith.addf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK:         arith.addf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK-NOT:   scf.parallel
// CHECK:       func.return

func.func @split(%x: tensor<4x1048576xf32>) -> tensor<4xf32> {
  %r = accy.reduce add %x, dims = [1] : (tensor<4x1048576xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK-LABEL: func.func @accy_fn_split
// The planned reduce.chunks workspace (16 chunks x 4 rows x 4 bytes), viewed as f32.
// CHECK:       %[[WS:.*]] = memref.view %arena[%{{.*}}][] : memref<256xi8> to memref<256xi8>
// CHECK:       %[[PARTS:.*]] = memref.view %[[WS]][%{{.*}}][] : memref<256xi8> to memref<16x4xf32>
// Phase 1: (chunk, row) in parallel as one loop of 64 iterations, each chunk 65536
// elements in blocked loops.
// CHECK:       "scf.parallel"
// CHECK-NEXT:  ^{{.*}}(%[[IT:.*]]: index):
// CHECK-NEXT:    %[[ROW:.*]] = arith.remui %[[IT]], %{{.*}} : index
// CHECK-NEXT:    %[[CHUNK:.*]] = arith.divui %[[IT]], %{{.*}} : index
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<4x1048576xf32>
// CHECK:         memref.store %{{.*}}, %[[PARTS]][%[[CHUNK]], %[[ROW]]]
// CHECK:         scf.reduce
// Phase 2: each row folds its partials in order.
// CHECK:       scf.for %[[R:.*]] = {{.*}} {
// CHECK:         scf.for %[[P:.*]] = {{.*}} iter_args
// CHECK:           memref.load %[[PARTS]][%[[P]], %[[R]]] : memref<16x4xf32>
// CHECK:         memref.store %{{.*}}, %{{.*}}[%[[R]]] : memref<4xf32>
// CHECK:       memref.dealloc %arena

func.func @mm(%a: tensor<64x128xf32>, %b: tensor<128x256xf32>) -> tensor<64x256xf32> {
  %d = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
  return %d : tensor<64x256xf32>
}
// CHECK-LABEL: func.func @accy_fn_mm
// CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:   %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:   %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:   %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:   %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:   %[[C256:.*]] = arith.constant 256 : index
// Tiles of 32 columns (two vector<16xf32>: N is a multiple of 16) x 8 rows; the eight
// strips of 32 columns in parallel, each strip's row tiles in turn.
// CHECK:       "scf.parallel"(%[[C0]], %[[C8]], %[[C1]])
// CHECK-NEXT:  ^{{.*}}(%[[STRIP:.*]]: index):
// CHECK-NEXT:    arith.muli %[[STRIP]], %[[C32]] : index
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[C64]] step %[[C8]]
// The 8 x 2 accumulators start at zero and go through the whole k loop: each step loads
// two rhs vectors and one lhs scalar per row (broadcast) for sixteen FMAs.
// CHECK:         arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[C128]] step %{{.*}} iter_args
// CHECK-COUNT-2:   vector.load %{{.*}} : memref<128x256xf32>, vector<16xf32>
// CHECK:           vector.broadcast
// CHECK-COUNT-2:   vector.fma
// CHECK:         }
// CHECK-COUNT-16: vector.store

// One strip of 32 columns (fewer than PARALLEL_STRIPS): every tile in parallel, (strip,
// row tile) as one loop of 128 iterations.
func.func @tall(%a: tensor<1024x128xf32>, %b: tensor<128x32xf32>) -> tensor<1024x32xf32> {
  %d = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<1024x128xf32>, tensor<128x32xf32>) -> tensor<1024x32xf32>
  return %d : tensor<1024x32xf32>
}
// CHECK-LABEL: func.func @accy_fn_tall
// CHECK-DAG:   %[[T0:.*]] = arith.constant 0 : index
// CHECK-DAG:   %[[T1:.*]] = arith.constant 1 : index
// CHECK-DAG:   %[[T128:.*]] = arith.constant 128 : index
// CHECK:       "scf.parallel"(%[[T0]], %[[T128]], %[[T1]])

// With two threads the parallel loops become async tasks on the async runtime ABI;
// sequential code calls none of it.
// ASYNC-DAG:   llvm.call @mlirAsyncRuntimeCreateGroup
// ASYNC-DAG:   llvm.call @mlirAsyncRuntimeExecute
// ASYNC-DAG:   llvm.call @mlirAsyncRuntimeAwaitAllInGroup
// SEQ-NOT:     mlirAsyncRuntime
