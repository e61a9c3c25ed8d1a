// Single-element values computed from constants only (a standard deviation's `N - ddof`)
// fold into constants; larger ones and transcendental ones stay ops. The StableHLO
// importer folds the same way.
//
// RUN: accy-opt %s -p accy-fold-constants | filecheck %s

// CHECK-LABEL: func.func @normalizer
// CHECK-NEXT:    %n = accy.constant dense<2.550000e+02> : tensor<f32>
// CHECK-NEXT:    %row = accy.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %wide = accy.add %row, %row : tensor<4xf32>
// CHECK-NEXT:    %e = accy.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %exp = accy.exponential %e : tensor<f32>
// CHECK-NEXT:    %scaled = accy.divide %x, %n : tensor<f32>
// CHECK-NEXT:    func.return %scaled, %wide, %exp
func.func @normalizer(%x: tensor<f32>) -> (tensor<f32>, tensor<4xf32>, tensor<f32>) {
  %size = accy.constant dense<256.0> : tensor<f32>
  %ddof_i = accy.constant dense<1> : tensor<i32>
  %ddof = accy.convert %ddof_i : (tensor<i32>) -> tensor<f32>
  %n = accy.subtract %size, %ddof : tensor<f32>
  %row = accy.constant dense<1.0> : tensor<4xf32>
  %wide = accy.add %row, %row : tensor<4xf32>
  %e = accy.constant dense<1.0> : tensor<f32>
  %exp = accy.exponential %e : tensor<f32>
  %scaled = accy.divide %x, %n : tensor<f32>
  func.return %scaled, %wide, %exp : tensor<f32>, tensor<4xf32>, tensor<f32>
}
