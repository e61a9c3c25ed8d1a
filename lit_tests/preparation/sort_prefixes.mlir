// A sort read only through slices of the first k elements along its dim keeps those k
// (a top-k); its positions' iota fuses into the sort's kernel, which on the CPU inserts
// each row's 3 greatest straight into the results: no copy of the sorted rows, no scratch.
//
// RUN: accy-opt %s -p accy-sort-prefixes | filecheck %s
// RUN: accy-opt %s -p accy-sort-prefixes,accy-plan{target=cpu} | filecheck %s --check-prefix=PLAN

// CHECK-LABEL: func.func @top3
// CHECK-NEXT:    %p = accy.iota dim = 1 : tensor<2x8xi32>
// CHECK-NEXT:    %{{.*}}, %{{.*}} = accy.sort(%x, %p : tensor<2x8xf32>, tensor<2x8xi32>), dim = 1 -> (tensor<2x3xf32>, tensor<2x3xi32>) {
// CHECK:         func.return %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<2x3xi32>
// CHECK-NOT:     accy.slice

// PLAN:          accy.kernel 0 "sort" ins(%x : memref<2x8xf32, #accy.space<host>>) outs(%out0, %out1 : memref<2x3xf32, #accy.space<host>>, memref<2x3xi32, #accy.space<host>>) {
// PLAN-NOT:      workspaces
func.func @top3(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %p = accy.iota dim = 1 : tensor<2x8xi32>
  %a, %b = accy.sort(%x, %p : tensor<2x8xf32>, tensor<2x8xi32>), dim = 1 -> (tensor<2x8xf32>, tensor<2x8xi32>) {
  ^bb0(%l: tensor<f32>, %r: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>):
    %gt = accy.compare GT, %l, %r : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %gt : tensor<i1>
  }
  %va = accy.slice %a [0:2, 0:3] : (tensor<2x8xf32>) -> tensor<2x3xf32>
  %vb = accy.slice %b [0:2, 0:3] : (tensor<2x8xi32>) -> tensor<2x3xi32>
  func.return %va, %vb : tensor<2x3xf32>, tensor<2x3xi32>
}

// A slice that does not start at 0 keeps the sort whole.
// CHECK-LABEL: func.func @middle
// CHECK:         accy.sort(%x : tensor<8xf32>), dim = 0 -> (tensor<8xf32>) {
// CHECK:         accy.slice %{{.*}} [2:5] : (tensor<8xf32>) -> tensor<3xf32>
func.func @middle(%x: tensor<8xf32>) -> tensor<3xf32> {
  %a = accy.sort(%x : tensor<8xf32>), dim = 0 -> (tensor<8xf32>) {
  ^bb0(%l: tensor<f32>, %r: tensor<f32>):
    %lt = accy.compare LT, %l, %r : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %lt : tensor<i1>
  }
  %m = accy.slice %a [2:5] : (tensor<8xf32>) -> tensor<3xf32>
  func.return %m : tensor<3xf32>
}
