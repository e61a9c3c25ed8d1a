// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @reduce(%x: tensor<2x3xf32>, %i: tensor<4x5x6xi32>, %d: tensor<?x3xbf16>) -> tensor<2xf32> {
// CHECK-NEXT:    %0 = accy.reduce add %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %1 = accy.reduce max %x, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %2 = accy.reduce min %i, dims = [0, 2] : (tensor<4x5x6xi32>) -> tensor<5xi32>
// CHECK-NEXT:    %3 = accy.reduce mul %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT:    %4 = accy.reduce add %d, dims = [1] : (tensor<?x3xbf16>) -> tensor<?xbf16>
// CHECK-NEXT:    %5 = accy.reduce add %x, dims = [] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %0 : tensor<2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "reduce"
// GENERIC:         %0 = "accy.reduce"(%x) <{kind = #accy<combiner add>, dimensions = array<i64: 1>}> : (tensor<2x3xf32>) -> tensor<2xf32>
// GENERIC-NEXT:    %1 = "accy.reduce"(%x) <{kind = #accy<combiner max>, dimensions = array<i64: 0>}> : (tensor<2x3xf32>) -> tensor<3xf32>
// GENERIC-NEXT:    %2 = "accy.reduce"(%i) <{kind = #accy<combiner min>, dimensions = array<i64: 0, 2>}> : (tensor<4x5x6xi32>) -> tensor<5xi32>
// GENERIC-NEXT:    %3 = "accy.reduce"(%x) <{kind = #accy<combiner mul>, dimensions = array<i64: 0, 1>}> : (tensor<2x3xf32>) -> tensor<f32>
func.func @reduce(%x: tensor<2x3xf32>, %i: tensor<4x5x6xi32>, %d: tensor<?x3xbf16>) -> tensor<2xf32> {
  %0 = accy.reduce add %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %1 = accy.reduce max %x, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
  %2 = accy.reduce min %i, dims = [0, 2] : (tensor<4x5x6xi32>) -> tensor<5xi32>
  %3 = accy.reduce mul %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  %4 = accy.reduce add %d, dims = [1] : (tensor<?x3xbf16>) -> tensor<?xbf16>
  %5 = accy.reduce add %x, dims = [] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2xf32>
}

// CHECK-LABEL: func.func @dot_general(%l: tensor<8x2x3xf32>, %r: tensor<8x3x4xf32>, %a: tensor<2x3xf16>, %b: tensor<3x4xf16>, %v: tensor<5xi32>, %d: tensor<?x3xf32>, %e: tensor<3x?xf32>) -> tensor<8x2x4xf32> {
// CHECK-NEXT:    %0 = accy.dot_general %l, %r, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x2x3xf32>, tensor<8x3x4xf32>) -> tensor<8x2x4xf32>
// CHECK-NEXT:    %1 = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:    %2 = accy.dot_general %v, %v, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<5xi32>, tensor<5xi32>) -> tensor<i32>
// CHECK-NEXT:    %3 = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [] x [] : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x3x3x4xf16>
// CHECK-NEXT:    %4 = accy.dot_general %d, %e, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<?x3xf32>, tensor<3x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT:    func.return %0 : tensor<8x2x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "dot_general"
// GENERIC:         %0 = "accy.dot_general"(%l, %r) <{lhs_batching_dimensions = array<i64: 0>, rhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 2>, rhs_contracting_dimensions = array<i64: 1>}> : (tensor<8x2x3xf32>, tensor<8x3x4xf32>) -> tensor<8x2x4xf32>
// GENERIC-NEXT:    %1 = "accy.dot_general"(%a, %b) <{lhs_batching_dimensions = array<i64>, rhs_batching_dimensions = array<i64>, lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>}> : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
func.func @dot_general(%l: tensor<8x2x3xf32>, %r: tensor<8x3x4xf32>, %a: tensor<2x3xf16>, %b: tensor<3x4xf16>, %v: tensor<5xi32>, %d: tensor<?x3xf32>, %e: tensor<3x?xf32>) -> tensor<8x2x4xf32> {
  %0 = accy.dot_general %l, %r, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x2x3xf32>, tensor<8x3x4xf32>) -> tensor<8x2x4xf32>
  %1 = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
  %2 = accy.dot_general %v, %v, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<5xi32>, tensor<5xi32>) -> tensor<i32>
  %3 = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [] x [] : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x3x3x4xf16>
  %4 = accy.dot_general %d, %e, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<?x3xf32>, tensor<3x?xf32>) -> tensor<?x?xf32>
  func.return %0 : tensor<8x2x4xf32>
}

// CHECK-LABEL: func.func @scan(%x: tensor<2x3xf32>, %s: tensor<2x3xf32>, %i: tensor<7xi64>, %d: tensor<?x4xbf16>) -> tensor<2x3xf32> {
// CHECK-NEXT:    %0 = accy.scan add %x, %s, dim = 1 : tensor<2x3xf32>
// CHECK-NEXT:    %1 = accy.scan max %x, %s, dim = 0 : tensor<2x3xf32>
// CHECK-NEXT:    %2 = accy.scan min %i, %i, dim = 0 : tensor<7xi64>
// CHECK-NEXT:    %3 = accy.scan mul %d, %d, dim = 1 : tensor<?x4xbf16>
// CHECK-NEXT:    func.return %0 : tensor<2x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "scan"
// GENERIC:         %0 = "accy.scan"(%x, %s) <{kind = #accy<combiner add>, dimension = 1 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC-NEXT:    %1 = "accy.scan"(%x, %s) <{kind = #accy<combiner max>, dimension = 0 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @scan(%x: tensor<2x3xf32>, %s: tensor<2x3xf32>, %i: tensor<7xi64>, %d: tensor<?x4xbf16>) -> tensor<2x3xf32> {
  %0 = accy.scan add %x, %s, dim = 1 : tensor<2x3xf32>
  %1 = accy.scan max %x, %s, dim = 0 : tensor<2x3xf32>
  %2 = accy.scan min %i, %i, dim = 0 : tensor<7xi64>
  %3 = accy.scan mul %d, %d, dim = 1 : tensor<?x4xbf16>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @fold_and_sort(%x: tensor<4x9xf32>, %i: tensor<4x9xi32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4x9xf32>, tensor<4x9xi32>) {
// CHECK-NEXT:    %x0 = accy.constant dense<-3.000000e+38> : tensor<f32>
// CHECK-NEXT:    %i0 = accy.constant dense<0> : tensor<i32>
// CHECK-NEXT:    %v, %j = accy.fold(%x, %i : tensor<4x9xf32>, tensor<4x9xi32>) init(%x0, %i0 : tensor<f32>, tensor<i32>), dims = [1] -> (tensor<4xf32>, tensor<4xi32>) {
// CHECK-NEXT:    ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
// CHECK-NEXT:      %gt = accy.compare GT, %a, %b total_order : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:      %c = accy.select %gt, %a, %b : tensor<i1>, tensor<f32>
// CHECK-NEXT:      %k = accy.select %gt, %ai, %bi : tensor<i1>, tensor<i32>
// CHECK-NEXT:      accy.yield %c, %k : tensor<f32>, tensor<i32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %s, %p = accy.sort(%x, %i : tensor<4x9xf32>, tensor<4x9xi32>), dim = 1 stable -> (tensor<4x9xf32>, tensor<4x9xi32>) {
// CHECK-NEXT:    ^bb0(%l: tensor<f32>, %r: tensor<f32>, %li: tensor<i32>, %ri: tensor<i32>):
// CHECK-NEXT:      %lt = accy.compare LT, %l, %r : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:      accy.yield %lt : tensor<i1>
// CHECK-NEXT:    }
// GENERIC-LABEL: "func.func"() <{sym_name = "fold_and_sort"
// GENERIC:         %v, %j = "accy.fold"(%x, %i, %x0, %i0) <{dimensions = array<i64: 1>, operandSegmentSizes = array<i32: 2, 2>}> ({
// GENERIC:         %gt = "accy.compare"(%a, %b) <{direction = #accy<comparison_direction GT>, total_order}>
// GENERIC:         %s, %p = "accy.sort"(%x, %i) <{dimension = 1 : i64, is_stable}> ({
func.func @fold_and_sort(%x: tensor<4x9xf32>, %i: tensor<4x9xi32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4x9xf32>, tensor<4x9xi32>) {
  %x0 = accy.constant dense<-3.0e38> : tensor<f32>
  %i0 = accy.constant dense<0> : tensor<i32>
  %v, %j = accy.fold(%x, %i : tensor<4x9xf32>, tensor<4x9xi32>) init(%x0, %i0 : tensor<f32>, tensor<i32>), dims = [1] -> (tensor<4xf32>, tensor<4xi32>) {
  ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
    %gt = accy.compare GT, %a, %b total_order : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %c = accy.select %gt, %a, %b : tensor<i1>, tensor<f32>
    %k = accy.select %gt, %ai, %bi : tensor<i1>, tensor<i32>
    accy.yield %c, %k : tensor<f32>, tensor<i32>
  }
  %s, %p = accy.sort(%x, %i : tensor<4x9xf32>, tensor<4x9xi32>), dim = 1 stable -> (tensor<4x9xf32>, tensor<4x9xi32>) {
  ^bb0(%l: tensor<f32>, %r: tensor<f32>, %li: tensor<i32>, %ri: tensor<i32>):
    %lt = accy.compare LT, %l, %r : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %lt : tensor<i1>
  }
  func.return %v, %j, %s, %p : tensor<4xf32>, tensor<4xi32>, tensor<4x9xf32>, tensor<4x9xi32>
}
