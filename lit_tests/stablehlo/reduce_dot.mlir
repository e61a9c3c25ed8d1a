// RUN: accy-opt --import-stablehlo %s | filecheck %s

// Identity inits vanish; other inits are combined after the reduction.
// CHECK-LABEL: func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3x4xf32>, %arg2: tensor<2x4x5xf32>)
// CHECK-NEXT:    %0 = accy.reduce add %arg0, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %1 = accy.reduce max %arg0, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %2 = accy.reduce min %arg0, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT:    %3 = accy.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %4 = accy.reduce mul %arg0, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %5 = accy.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<2xf32>
// CHECK-NEXT:    %6 = accy.multiply %4, %5 : tensor<2xf32>
// CHECK-NEXT:    %7 = accy.dot_general %arg1, %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %6, %7
func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3x4xf32>, %arg2: tensor<2x4x5xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<f32>, tensor<2xf32>, tensor<2x3x5xf32>) {
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = stablehlo.reduce(%arg0 init: %ninf) applies stablehlo.maximum across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %2 = stablehlo.reduce(%arg0 init: %inf) across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    reducer(%a: tensor<f32>, %b: tensor<f32>) {
      %m = stablehlo.minimum %b, %a : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }
  %two = stablehlo.constant dense<2.000000e+00> : tensor<f32>
  %3 = stablehlo.reduce(%arg0 init: %two) applies stablehlo.multiply across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  %4 = stablehlo.dot_general %arg1, %arg2, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<3xf32>, tensor<f32>, tensor<2xf32>, tensor<2x3x5xf32>
}

// An argmax as JAX lowers it (values and indices reduced together, ties to the first
// index) is a general reduce: an accy.fold whose body holds the comparator.
// CHECK-LABEL: func.func @argmax(%arg0: tensor<5x7xf32>) -> tensor<5xi32>
// CHECK:         %{{.*}}, %[[INDEX:.*]] = accy.fold(%arg0, %{{.*}} : tensor<5x7xf32>, tensor<5x7xi32>) init(%{{.*}}, %{{.*}} : tensor<f32>, tensor<i32>), dims = [1] -> (tensor<5xf32>, tensor<5xi32>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<f32>, %{{.*}}: tensor<i32>, %{{.*}}: tensor<f32>, %{{.*}}: tensor<i32>):
// CHECK:           accy.yield %{{.*}}, %{{.*}} : tensor<f32>, tensor<i32>
// CHECK:         func.return %[[INDEX]] : tensor<5xi32>
func.func @argmax(%x: tensor<5x7xf32>) -> tensor<5xi32> {
  %iota = stablehlo.iota dim = 1 : tensor<5x7xi32>
  %lowest = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %lowest), (%iota init: %zero) across dimensions = [1] : (tensor<5x7xf32>, tensor<5x7xi32>, tensor<f32>, tensor<i32>) -> (tensor<5xf32>, tensor<5xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>)  {
    %gt = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = stablehlo.compare  EQ, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare  LT, %i, %j,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %first = stablehlo.or %gt, %tie : tensor<i1>
    %v = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<f32>
    %k = stablehlo.select %first, %i, %j : tensor<i1>, tensor<i32>
    stablehlo.return %v, %k : tensor<f32>, tensor<i32>
  }
  return %r#1 : tensor<5xi32>
}

// A reduce from its identity over dims of extent 1 folds one element each: a reshape (JAX
// checks a gather's index bounds this way), but for a float sum (+0.0 + -0.0 is +0.0).
// CHECK-LABEL: func.func @unit_dims(%arg0: tensor<4x1x1xi1>, %arg1: tensor<4x1xf32>)
// CHECK-NEXT:    %0 = accy.reshape %arg0 : (tensor<4x1x1xi1>) -> tensor<4xi1>
// CHECK-NEXT:    %1 = accy.reshape %arg1 : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %2 = accy.reduce add %arg1, dims = [1] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %0, %1, %2
func.func @unit_dims(%arg0: tensor<4x1x1xi1>, %arg1: tensor<4x1xf32>) -> (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) {
  %true = stablehlo.constant dense<true> : tensor<i1>
  %0 = stablehlo.reduce(%arg0 init: %true) applies stablehlo.and across dimensions = [1, 2] : (tensor<4x1x1xi1>, tensor<i1>) -> tensor<4xi1>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = stablehlo.reduce(%arg1 init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<4x1xf32>, tensor<f32>) -> tensor<4xf32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %2 = stablehlo.reduce(%arg1 init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x1xf32>, tensor<f32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xf32>, tensor<4xf32>
}

// A sort of several operands along any dim keeps its comparator region; chlo.top_k (read
// in its custom form) becomes an iota sorted with the operand, greatest first in total
// order, whose results keep the first k of each row (accy-sort-prefixes folds the slices).
// CHECK-LABEL: func.func @sort_pairs(%arg0: tensor<3x4xi32>, %arg1: tensor<3x4xf32>)
// CHECK:         %{{.*}}, %{{.*}} = accy.sort(%arg0, %arg1 : tensor<3x4xi32>, tensor<3x4xf32>), dim = 0 stable -> (tensor<3x4xi32>, tensor<3x4xf32>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<i32>, %{{.*}}: tensor<i32>, %{{.*}}: tensor<f32>, %{{.*}}: tensor<f32>):
// CHECK-NEXT:      %{{.*}} = accy.compare LT, %{{.*}}, %{{.*}} : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:      accy.yield %{{.*}} : tensor<i1>
func.func @sort_pairs(%arg0: tensor<3x4xi32>, %arg1: tensor<3x4xf32>) -> (tensor<3x4xi32>, tensor<3x4xf32>) {
  %0:2 = "stablehlo.sort"(%arg0, %arg1) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<3x4xi32>, tensor<3x4xf32>) -> (tensor<3x4xi32>, tensor<3x4xf32>)
  return %0#0, %0#1 : tensor<3x4xi32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @top_k(%arg0: tensor<4x6xf32>)
// CHECK-NEXT:    %[[IOTA:.*]] = accy.iota dim = 1 : tensor<4x6xi32>
// CHECK-NEXT:    %[[V:.*]], %[[I:.*]] = accy.sort(%arg0, %[[IOTA]] : tensor<4x6xf32>, tensor<4x6xi32>), dim = 1 stable -> (tensor<4x2xf32>, tensor<4x2xi32>) {
// CHECK:           %{{.*}} = accy.compare GT, %{{.*}}, %{{.*}} total_order : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         func.return %[[V]], %[[I]] : tensor<4x2xf32>, tensor<4x2xi32>
func.func @top_k(%x: tensor<4x6xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>) {
  %values, %indices = chlo.top_k(%x, k = 2) : tensor<4x6xf32> -> (tensor<4x2xf32>, tensor<4x2xi32>)
  return %values, %indices : tensor<4x2xf32>, tensor<4x2xi32>
}
