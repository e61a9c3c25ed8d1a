// RUN: accy-opt --import-stablehlo %s | filecheck %s

// chlo ops in JAX's custom form: erf is expanded by StableHLO's chlo-legalize-to-stablehlo
// (XLA's rational approximation, clamped to [-1, 1]), atanh by the importer itself
// (log1p(x) - log1p(-x), halved), mulhi on i32 through the product in i64; a bitcast
// reads the bits as i32.
func.func @main(%x: tensor<4xf32>, %a: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = chlo.erf %x : tensor<4xf32> -> tensor<4xf32>
  %1 = chlo.atanh %x : tensor<4xf32> -> tensor<4xf32>
  %2 = chlo.mulhi %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %3 = stablehlo.bitcast_convert %x : (tensor<4xf32>) -> tensor<4xi32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @main
// CHECK:       accy.maximum
// CHECK:       accy.minimum
// CHECK:       %[[P:.*]] = accy.log_plus_one %arg0 : tensor<4xf32>
// CHECK:       %[[N:.*]] = accy.negate %arg0 : tensor<4xf32>
// CHECK:       %[[Q:.*]] = accy.log_plus_one %[[N]] : tensor<4xf32>
// CHECK:       accy.subtract %[[P]], %[[Q]] : tensor<4xf32>
// CHECK:       accy.convert %arg1 : (tensor<4xi32>) -> tensor<4xi64>
// CHECK:       accy.shift_right_arithmetic
// CHECK:       accy.convert %{{.*}} : (tensor<4xi64>) -> tensor<4xi32>
// CHECK:       accy.bitcast_convert %arg0 : (tensor<4xf32>) -> tensor<4xi32>
