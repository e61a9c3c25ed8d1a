// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | %mlir-check > /dev/null

// Dynamic rows without a `rows` plan: the `?` dims are bound to dim 0 of %x, and the
// dynamic temporaries (slot 2, %s: read by the reduce's group and by the divide's, so it
// is stored; slot 3, the row sums %q) get separate allocations freed at the end. The
// loop's carried buffer (slot 5, the iterate's result) is the out-param; the init is
// copied in, the body writes slot 6 (static, 16 bytes, the one temporary of the CPU
// plan's arena, 64 bytes at the CPU's 64-byte alignment) and the yield copies it back into the carried buffer each
// iteration.

func.func @f(%x: tensor<?x4xf32>, %v: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>) {
  %s = accy.exponential %x : tensor<?x4xf32>
  %q = accy.reduce add %s, dims = [1] : (tensor<?x4xf32>) -> tensor<?xf32>
  %qb = accy.broadcast_in_dim %q, dims = [0] : (tensor<?xf32>) -> tensor<?x4xf32>
  %t = accy.divide %s, %qb : tensor<?x4xf32>
  %r = accy.iterate 3 iter_args(%c = %v) : tensor<4xf32> {
    %n = accy.multiply %c, %c : tensor<4xf32>
    accy.yield %n : tensor<4xf32>
  }
  return %t, %r : tensor<?x4xf32>, tensor<4xf32>
}

// CHECK:      func.func @accy_fn_f(%[[X:.*]]: memref<?x4xf32> {llvm.noalias}, %[[V:.*]]: memref<4xf32> {llvm.noalias}, %[[T:.*]]: memref<?x4xf32> {llvm.noalias}, %[[R:.*]]: memref<4xf32> {llvm.noalias})
// CHECK:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %rows = memref.dim %[[X]], %[[C0]] : memref<?x4xf32>
// CHECK-DAG:  %[[C3:.*]] = arith.constant 3 : index
// CHECK:      %arena = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:      %[[S:.*]] = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x4xf32>
// CHECK:      %[[Q:.*]] = memref.alloc(%rows) {alignment = 64 : i64} : memref<?xf32>
// CHECK:      %[[N:.*]] = memref.view %arena[%[[C0]]][] : memref<64xi8> to memref<4xf32>
// Work item 0 (exp) loops over the bound rows: its size is not known, so the row loop
// is an `scf.parallel` (threads split it at run time) around the sequential column loop.
// CHECK:      "scf.parallel"(%[[C0]], %rows, %{{.*}})
// CHECK:        scf.for
// CHECK:        arith.bitcast
// CHECK:        memref.store %{{.*}}, %[[S]]
// Work item 1 (reduce) sums each row into %q.
// CHECK:      "scf.parallel"(%[[C0]], %rows, %{{.*}})
// CHECK:        scf.for {{.*}} iter_args
// CHECK:        memref.store %{{.*}}, %[[Q]]
// Work item 2 (divide by the broadcast sums) writes the out-param.
// CHECK:      "scf.parallel"(%[[C0]], %rows, %{{.*}})
// CHECK:        arith.divf
// CHECK:        memref.store %{{.*}}, %[[T]]
// Work item 3 (iterate): init copy, 3 trips, body work item 4, yield copy.
// CHECK:      "memref.copy"(%[[V]], %[[R]])
// CHECK:      scf.for %{{.*}} = %[[C0]] to %[[C3]] step
// CHECK:        scf.for
// CHECK:          memref.load %[[R]]
// CHECK:          arith.mulf
// CHECK:          memref.store %{{.*}}, %[[N]]
// CHECK:        "memref.copy"(%[[N]], %[[R]])
// CHECK:      memref.dealloc %[[Q]] : memref<?xf32>
// CHECK:      memref.dealloc %[[S]] : memref<?x4xf32>
// CHECK:      memref.dealloc %arena : memref<64xi8>
// CHECK:      func.return
