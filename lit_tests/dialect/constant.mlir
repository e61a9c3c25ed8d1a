// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// `accy.constant` prints its dense value in MLIR's canonical form: floats in `%e` style,
// booleans as true/false, a splat as one value.

// CHECK-LABEL: func.func @constants() -> tensor<2xf32> {
// CHECK-NEXT:    %list = accy.constant dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %splat = accy.constant dense<5.000000e-01> : tensor<3x4xf32>
// CHECK-NEXT:    %bools = accy.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK-NEXT:    %btrue = accy.constant dense<true> : tensor<2x2xi1>
// CHECK-NEXT:    %bf = accy.constant dense<[1.500000e+00, -2.000000e+00]> : tensor<2xbf16>
// CHECK-NEXT:    %bfs = accy.constant dense<1.500000e+00> : tensor<2xbf16>
// CHECK-NEXT:    %h = accy.constant dense<[2.500000e-01, 4.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    %i = accy.constant dense<[1, -2, 3]> : tensor<3xi32>
// CHECK-NEXT:    %is = accy.constant dense<7> : tensor<4xi32>
// CHECK-NEXT:    %l = accy.constant dense<[9223372036854775807, -1]> : tensor<2xi64>
// CHECK-NEXT:    %m = accy.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    %mi = accy.constant dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-NEXT:    %s = accy.constant dense<3.000000e+00> : tensor<f32>
// CHECK-NEXT:    func.return %list : tensor<2xf32>
// CHECK-NEXT:  }

// GENERIC-LABEL: "func.func"() <{sym_name = "constants", function_type = () -> tensor<2xf32>}> ({
// GENERIC-NEXT:    %list = "accy.constant"() <{value = dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
// GENERIC-NEXT:    %splat = "accy.constant"() <{value = dense<5.000000e-01> : tensor<3x4xf32>}> : () -> tensor<3x4xf32>
// GENERIC-NEXT:    %bools = "accy.constant"() <{value = dense<[true, false, true]> : tensor<3xi1>}> : () -> tensor<3xi1>
// GENERIC-NEXT:    %btrue = "accy.constant"() <{value = dense<true> : tensor<2x2xi1>}> : () -> tensor<2x2xi1>
// GENERIC-NEXT:    %bf = "accy.constant"() <{value = dense<[1.500000e+00, -2.000000e+00]> : tensor<2xbf16>}> : () -> tensor<2xbf16>
// GENERIC:         %i = "accy.constant"() <{value = dense<[1, -2, 3]> : tensor<3xi32>}> : () -> tensor<3xi32>
// GENERIC:         %mi = "accy.constant"() <{value = dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi32>}> : () -> tensor<2x2xi32>
func.func @constants() -> tensor<2xf32> {
  %list = accy.constant dense<[1.0, 2.5]> : tensor<2xf32>
  %splat = accy.constant dense<0.5> : tensor<3x4xf32>
  %bools = accy.constant dense<[true, false, true]> : tensor<3xi1>
  %btrue = accy.constant dense<true> : tensor<2x2xi1>
  %bf = accy.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %bfs = accy.constant dense<1.5> : tensor<2xbf16>
  %h = accy.constant dense<[0.25, 4.0]> : tensor<2xf16>
  %i = accy.constant dense<[1, -2, 3]> : tensor<3xi32>
  %is = accy.constant dense<7> : tensor<4xi32>
  %l = accy.constant dense<[9223372036854775807, -1]> : tensor<2xi64>
  %m = accy.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %mi = accy.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %s = accy.constant dense<3.0> : tensor<f32>
  func.return %list : tensor<2xf32>
}

// A constant feeds other ops like any value.
// CHECK-LABEL: func.func @use(%x: tensor<2xf32>) -> tensor<2xf32> {
// CHECK-NEXT:    %c = accy.constant dense<2.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %0 = accy.multiply %x, %c : tensor<2xf32>
// CHECK-NEXT:    func.return %0 : tensor<2xf32>
func.func @use(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = accy.constant dense<2.0> : tensor<2xf32>
  %0 = accy.multiply %x, %c : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
