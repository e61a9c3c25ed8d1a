// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every elementwise op, in its custom syntax, on several element types and a dynamic dim.

// CHECK-LABEL: func.func @binary_f32(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %0 = accy.add %a, %b : tensor<4xf32>
// CHECK-NEXT:    %1 = accy.subtract %0, %b : tensor<4xf32>
// CHECK-NEXT:    %2 = accy.multiply %1, %a : tensor<4xf32>
// CHECK-NEXT:    %3 = accy.divide %2, %b : tensor<4xf32>
// CHECK-NEXT:    %4 = accy.maximum %3, %a : tensor<4xf32>
// CHECK-NEXT:    %5 = accy.minimum %4, %b : tensor<4xf32>
// CHECK-NEXT:    %6 = accy.power %5, %a : tensor<4xf32>
// CHECK-NEXT:    func.return %6 : tensor<4xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "binary_f32"
// GENERIC:         %0 = "accy.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %1 = "accy.subtract"(%0, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %2 = "accy.multiply"(%1, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %3 = "accy.divide"(%2, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %4 = "accy.maximum"(%3, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %5 = "accy.minimum"(%4, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %6 = "accy.power"(%5, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    "func.return"(%6) : (tensor<4xf32>) -> ()
func.func @binary_f32(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %b : tensor<4xf32>
  %1 = accy.subtract %0, %b : tensor<4xf32>
  %2 = accy.multiply %1, %a : tensor<4xf32>
  %3 = accy.divide %2, %b : tensor<4xf32>
  %4 = accy.maximum %3, %a : tensor<4xf32>
  %5 = accy.minimum %4, %b : tensor<4xf32>
  %6 = accy.power %5, %a : tensor<4xf32>
  func.return %6 : tensor<4xf32>
}

// Integer and half-precision operands of the binary ops.
// CHECK-LABEL: func.func @binary_types(
// CHECK-NEXT:    %0 = accy.add %i, %i : tensor<2x3xi32>
// CHECK-NEXT:    %1 = accy.subtract %j, %j : tensor<5xi64>
// CHECK-NEXT:    %2 = accy.multiply %h, %h : tensor<8xf16>
// CHECK-NEXT:    %3 = accy.divide %bf, %bf : tensor<1x1xbf16>
// CHECK-NEXT:    %4 = accy.maximum %i, %0 : tensor<2x3xi32>
// CHECK-NEXT:    %5 = accy.minimum %j, %1 : tensor<5xi64>
// CHECK-NEXT:    %6 = accy.power %h, %2 : tensor<8xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "binary_types"
// GENERIC:         "accy.add"(%i, %i) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// GENERIC:         "accy.divide"(%bf, %bf) : (tensor<1x1xbf16>, tensor<1x1xbf16>) -> tensor<1x1xbf16>
func.func @binary_types(%i: tensor<2x3xi32>, %j: tensor<5xi64>, %h: tensor<8xf16>, %bf: tensor<1x1xbf16>) -> tensor<2x3xi32> {
  %0 = accy.add %i, %i : tensor<2x3xi32>
  %1 = accy.subtract %j, %j : tensor<5xi64>
  %2 = accy.multiply %h, %h : tensor<8xf16>
  %3 = accy.divide %bf, %bf : tensor<1x1xbf16>
  %4 = accy.maximum %i, %0 : tensor<2x3xi32>
  %5 = accy.minimum %j, %1 : tensor<5xi64>
  %6 = accy.power %h, %2 : tensor<8xf16>
  func.return %4 : tensor<2x3xi32>
}

// The unary ops: negate and abs take any numeric type, the rest only floats.
// CHECK-LABEL: func.func @unary(
// CHECK-NEXT:    %0 = accy.negate %x : tensor<4xf32>
// CHECK-NEXT:    %1 = accy.abs %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = accy.exponential %1 : tensor<4xf32>
// CHECK-NEXT:    %3 = accy.log %2 : tensor<4xf32>
// CHECK-NEXT:    %4 = accy.tanh %3 : tensor<4xf32>
// CHECK-NEXT:    %5 = accy.sqrt %4 : tensor<4xf32>
// CHECK-NEXT:    %6 = accy.rsqrt %5 : tensor<4xf32>
// CHECK-NEXT:    %7 = accy.logistic %6 : tensor<4xf32>
// CHECK-NEXT:    %8 = accy.negate %i : tensor<3xi32>
// CHECK-NEXT:    %9 = accy.abs %j : tensor<3xi64>
// CHECK-NEXT:    %10 = accy.exponential %h : tensor<2x2xf16>
// CHECK-NEXT:    %11 = accy.logistic %bf : tensor<7xbf16>
// CHECK-NEXT:    func.return %7 : tensor<4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "unary"
// GENERIC:         %0 = "accy.negate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %1 = "accy.abs"(%0) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %2 = "accy.exponential"(%1) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %3 = "accy.log"(%2) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %4 = "accy.tanh"(%3) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %5 = "accy.sqrt"(%4) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %6 = "accy.rsqrt"(%5) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %7 = "accy.logistic"(%6) : (tensor<4xf32>) -> tensor<4xf32>
func.func @unary(%x: tensor<4xf32>, %i: tensor<3xi32>, %j: tensor<3xi64>, %h: tensor<2x2xf16>, %bf: tensor<7xbf16>) -> tensor<4xf32> {
  %0 = accy.negate %x : tensor<4xf32>
  %1 = accy.abs %0 : tensor<4xf32>
  %2 = accy.exponential %1 : tensor<4xf32>
  %3 = accy.log %2 : tensor<4xf32>
  %4 = accy.tanh %3 : tensor<4xf32>
  %5 = accy.sqrt %4 : tensor<4xf32>
  %6 = accy.rsqrt %5 : tensor<4xf32>
  %7 = accy.logistic %6 : tensor<4xf32>
  %8 = accy.negate %i : tensor<3xi32>
  %9 = accy.abs %j : tensor<3xi64>
  %10 = accy.exponential %h : tensor<2x2xf16>
  %11 = accy.logistic %bf : tensor<7xbf16>
  func.return %7 : tensor<4xf32>
}

// Dynamic dims print as `?`.
// CHECK-LABEL: func.func @dynamic(%d: tensor<?x3xbf16>, %e: tensor<?x?xf32>) -> tensor<?x3xbf16> {
// CHECK-NEXT:    %0 = accy.add %d, %d : tensor<?x3xbf16>
// CHECK-NEXT:    %1 = accy.tanh %0 : tensor<?x3xbf16>
// CHECK-NEXT:    %2 = accy.multiply %e, %e : tensor<?x?xf32>
// CHECK-NEXT:    %3 = accy.sqrt %2 : tensor<?x?xf32>
// CHECK-NEXT:    func.return %1 : tensor<?x3xbf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "dynamic"
// GENERIC:         %0 = "accy.add"(%d, %d) : (tensor<?x3xbf16>, tensor<?x3xbf16>) -> tensor<?x3xbf16>
// GENERIC-NEXT:    %1 = "accy.tanh"(%0) : (tensor<?x3xbf16>) -> tensor<?x3xbf16>
func.func @dynamic(%d: tensor<?x3xbf16>, %e: tensor<?x?xf32>) -> tensor<?x3xbf16> {
  %0 = accy.add %d, %d : tensor<?x3xbf16>
  %1 = accy.tanh %0 : tensor<?x3xbf16>
  %2 = accy.multiply %e, %e : tensor<?x?xf32>
  %3 = accy.sqrt %2 : tensor<?x?xf32>
  func.return %1 : tensor<?x3xbf16>
}

// A rank-0 tensor.
// CHECK-LABEL: func.func @scalar(%s: tensor<f32>) -> tensor<f32> {
// CHECK-NEXT:    %0 = accy.add %s, %s : tensor<f32>
func.func @scalar(%s: tensor<f32>) -> tensor<f32> {
  %0 = accy.add %s, %s : tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @rounding(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:    %f = accy.floor %x : tensor<4xf32>
// CHECK-NEXT:    %c = accy.ceil %x : tensor<4xf32>
func.func @rounding(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %f = accy.floor %x : tensor<4xf32>
  %c = accy.ceil %x : tensor<4xf32>
  func.return %f, %c : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @exact(%a: tensor<4xi32>, %x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
// CHECK-NEXT:    %0 = accy.remainder %a, %a : tensor<4xi32>
// CHECK-NEXT:    %1 = accy.shift_left %a, %a : tensor<4xi32>
// CHECK-NEXT:    %2 = accy.shift_right_arithmetic %a, %a : tensor<4xi32>
// CHECK-NEXT:    %3 = accy.shift_right_logical %a, %a : tensor<4xi32>
// CHECK-NEXT:    %4 = accy.sign %a : tensor<4xi32>
// CHECK-NEXT:    %5 = accy.popcnt %a : tensor<4xi32>
// CHECK-NEXT:    %6 = accy.count_leading_zeros %a : tensor<4xi32>
// CHECK-NEXT:    %7 = accy.round_nearest_even %x : tensor<4xf32>
// CHECK-NEXT:    %8 = accy.round_nearest_afz %x : tensor<4xf32>
// CHECK-NEXT:    %9 = accy.is_finite %x : (tensor<4xf32>) -> tensor<4xi1>
func.func @exact(%a: tensor<4xi32>, %x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
  %0 = accy.remainder %a, %a : tensor<4xi32>
  %1 = accy.shift_left %a, %a : tensor<4xi32>
  %2 = accy.shift_right_arithmetic %a, %a : tensor<4xi32>
  %3 = accy.shift_right_logical %a, %a : tensor<4xi32>
  %4 = accy.sign %a : tensor<4xi32>
  %5 = accy.popcnt %a : tensor<4xi32>
  %6 = accy.count_leading_zeros %a : tensor<4xi32>
  %7 = accy.round_nearest_even %x : tensor<4xf32>
  %8 = accy.round_nearest_afz %x : tensor<4xf32>
  %9 = accy.is_finite %x : (tensor<4xf32>) -> tensor<4xi1>
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>
}

// CHECK-LABEL: func.func @transcendental(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:    %0 = accy.sine %x : tensor<4xf32>
// CHECK-NEXT:    %1 = accy.cosine %x : tensor<4xf32>
// CHECK-NEXT:    %2 = accy.tan %x : tensor<4xf32>
// CHECK-NEXT:    %3 = accy.cbrt %x : tensor<4xf32>
// CHECK-NEXT:    %4 = accy.log_plus_one %x : tensor<4xf32>
// CHECK-NEXT:    %5 = accy.exponential_minus_one %x : tensor<4xf32>
// CHECK-NEXT:    %6 = accy.atan2 %x, %x : tensor<4xf32>
func.func @transcendental(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = accy.sine %x : tensor<4xf32>
  %1 = accy.cosine %x : tensor<4xf32>
  %2 = accy.tan %x : tensor<4xf32>
  %3 = accy.cbrt %x : tensor<4xf32>
  %4 = accy.log_plus_one %x : tensor<4xf32>
  %5 = accy.exponential_minus_one %x : tensor<4xf32>
  %6 = accy.atan2 %x, %x : tensor<4xf32>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
