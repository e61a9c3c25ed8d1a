// RUN: accy-opt --import-stablehlo %s | filecheck %s

// CHECK-LABEL: func.func @main() -> (tensor<2xf32>, tensor<2x2xf16>, tensor<3xbf16>, tensor<2xi1>, tensor<2xi32>, tensor<2xi64>) {
// CHECK-NEXT:    %0 = accy.constant dense<[1.500000e+00, 0xff800000]> : tensor<2xf32>
// CHECK-NEXT:    %1 = accy.constant dense<2.500000e-01> : tensor<2x2xf16>
// CHECK-NEXT:    %2 = accy.constant dense<[1.000000e+00, -2.000000e+00, 3.000000e+00]> : tensor<3xbf16>
// CHECK-NEXT:    %3 = accy.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:    %4 = accy.constant dense<-7> : tensor<2xi32>
// CHECK-NEXT:    %5 = accy.constant dense<[1, 9223372036854775807]> : tensor<2xi64>
// CHECK-NEXT:    func.return %0, %1, %2, %3, %4, %5
func.func @main() -> (tensor<2xf32>, tensor<2x2xf16>, tensor<3xbf16>, tensor<2xi1>, tensor<2xi32>, tensor<2xi64>) {
  %0 = stablehlo.constant dense<[1.5, 0xFF800000]> : tensor<2xf32>
  %1 = stablehlo.constant dense<0.25> : tensor<2x2xf16>
  %2 = stablehlo.constant dense<[1.0, -2.0, 3.0]> : tensor<3xbf16>
  %3 = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %4 = stablehlo.constant dense<-7> : tensor<2xi32>
  %5 = stablehlo.constant dense<[1, 9223372036854775807]> : tensor<2xi64>
  // An unused constant disappears.
  %6 = stablehlo.constant dense<0> : tensor<2xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<2x2xf16>, tensor<3xbf16>, tensor<2xi1>, tensor<2xi32>, tensor<2xi64>
}
