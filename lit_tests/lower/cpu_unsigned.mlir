// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | %mlir-check

// Unsigned integers compute on signless memrefs with the unsigned arith ops: division
// (x / 0 is all ones, selected), remainder, maximum, the LT compare and a max reduction
// whose identity is 0. f64 stays f64.

func.func @f(%a: tensor<4xui8>, %b: tensor<4xui8>, %x: tensor<4xf64>) -> (tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<ui8>, tensor<4xf64>) {
  %d = accy.divide %a, %b : tensor<4xui8>
  %r = accy.remainder %a, %b : tensor<4xui8>
  %m = accy.maximum %a, %b : tensor<4xui8>
  %lt = accy.compare LT, %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %top = accy.reduce max %a, dims = [0] : (tensor<4xui8>) -> tensor<ui8>
  %e = accy.exponential %x : tensor<4xf64>
  return %d, %r, %m, %lt, %top, %e : tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<ui8>, tensor<4xf64>
}

// CHECK:     func.func @accy_fn_f(%a: memref<4xi8> {{.*}}, %b: memref<4xi8> {{.*}}, %x: memref<4xf64>
// CHECK-DAG: arith.divui %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.remui %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.maxui %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.cmpi ult, %{{.*}}, %{{.*}} : i8
// CHECK-DAG: arith.constant 0 : i8
// CHECK-DAG: math.exp %{{.*}} : f64
// CHECK-NOT: ui8
