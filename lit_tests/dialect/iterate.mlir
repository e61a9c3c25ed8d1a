// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Two carried values; the results are printed as a list of names.
// CHECK-LABEL: func.func @two(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    [[R:%[^ ,]+]], [[R1:%[^ ,]+]] = accy.iterate 5 iter_args(%p = %a, %q = %b) : tensor<4xf32>, tensor<4xf32> {
// CHECK-NEXT:      %p2 = accy.add %p, %q : tensor<4xf32>
// CHECK-NEXT:      accy.yield %p2, %q : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]] : tensor<4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "two"
// GENERIC:         {{%[^ ,]+}}, {{%[^ ,]+}} = "accy.iterate"(%a, %b) <{trip_count = 5 : i64}> ({
// GENERIC-NEXT:    ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
// GENERIC-NEXT:      %p2 = "accy.add"(%p, %q) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:      "accy.yield"(%p2, %q) : (tensor<4xf32>, tensor<4xf32>) -> ()
// GENERIC-NEXT:    }) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func @two(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = accy.iterate 5 iter_args(%p = %a, %q = %b) : tensor<4xf32>, tensor<4xf32> {
    %p2 = accy.add %p, %q : tensor<4xf32>
    accy.yield %p2, %q : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r#0 : tensor<4xf32>
}

// One carried value of another type, a zero trip count, and a body that uses an outer value.
// CHECK-LABEL: func.func @one(%x: tensor<2x?xi32>, %y: tensor<2x?xi32>) -> tensor<2x?xi32> {
// CHECK-NEXT:    [[R:%[^ ]+]] = accy.iterate 0 iter_args(%acc = %x) : tensor<2x?xi32> {
// CHECK-NEXT:      %next = accy.maximum %acc, %y : tensor<2x?xi32>
// CHECK-NEXT:      accy.yield %next : tensor<2x?xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]] : tensor<2x?xi32>
// GENERIC-LABEL: "func.func"() <{sym_name = "one"
// GENERIC:         {{%[^ ]+}} = "accy.iterate"(%x) <{trip_count = 0 : i64}> ({
// GENERIC-NEXT:    ^bb0(%acc: tensor<2x?xi32>):
func.func @one(%x: tensor<2x?xi32>, %y: tensor<2x?xi32>) -> tensor<2x?xi32> {
  %r = accy.iterate 0 iter_args(%acc = %x) : tensor<2x?xi32> {
    %next = accy.maximum %acc, %y : tensor<2x?xi32>
    accy.yield %next : tensor<2x?xi32>
  }
  func.return %r : tensor<2x?xi32>
}

// Nested loops, and a loop whose body holds other op families.
// CHECK-LABEL: func.func @nested(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    [[R:%[^ ]+]] = accy.iterate 3 iter_args(%o = %a) : tensor<2x3xf32> {
// CHECK-NEXT:      [[IN:%[^ ]+]] = accy.iterate 2 iter_args(%i = %o) : tensor<2x3xf32> {
// CHECK-NEXT:        %s = accy.reduce add %i, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:        %b = accy.broadcast_in_dim %s, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:        %d = accy.divide %i, %b : tensor<2x3xf32>
// CHECK-NEXT:        accy.yield %d : tensor<2x3xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      accy.yield [[IN]] : tensor<2x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return [[R]] : tensor<2x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "nested"
// GENERIC:         {{%[^ ]+}} = "accy.iterate"(%a) <{trip_count = 3 : i64}> ({
// GENERIC-NEXT:    ^bb0(%o: tensor<2x3xf32>):
// GENERIC-NEXT:      {{%[^ ]+}} = "accy.iterate"(%o) <{trip_count = 2 : i64}> ({
func.func @nested(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = accy.iterate 3 iter_args(%o = %a) : tensor<2x3xf32> {
    %in = accy.iterate 2 iter_args(%i = %o) : tensor<2x3xf32> {
      %s = accy.reduce add %i, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
      %b = accy.broadcast_in_dim %s, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
      %d = accy.divide %i, %b : tensor<2x3xf32>
      accy.yield %d : tensor<2x3xf32>
    }
    accy.yield %in : tensor<2x3xf32>
  }
  func.return %r : tensor<2x3xf32>
}
