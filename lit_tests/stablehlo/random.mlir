// RUN: accy-opt --import-stablehlo %s | filecheck %s
// RUN: accy-opt --import-stablehlo %s -p accy-plan | filecheck %s --check-prefix=PLAN

// rng_bit_generator is expanded into integer ops as XLA computes THREE_FRY: the key and
// the counters split into 32-bit halves, the key schedule's parity constant, 20 rounds
// (each a rotation: shift left, shift right, or), the halves joined, the counter advanced.
// CHECK-LABEL: func.func @bits(%arg0: tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui64>)
// CHECK:         accy.iota dim = 0 : tensor<3xui64>
// CHECK:         accy.constant dense<466688986> : tensor<3xui32>
// CHECK-COUNT-20: accy.shift_left %{{.*}} : tensor<3xui32>
// CHECK:         accy.constant dense<3> : tensor<1xui64>
// CHECK:         accy.concatenate %{{.*}}, %{{.*}}, dim = 0 : (tensor<1xui64>, tensor<1xui64>) -> tensor<2xui64>
// The plan fuses the rounds: a handful of kernels, not hundreds.
// PLAN-LABEL: func.func @bits
// PLAN-COUNT-5: accy.kernel
// PLAN-NOT:     accy.kernel
func.func @bits(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui64>) {
  %state, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui64>)
  return %state, %bits : tensor<2xui64>, tensor<3xui64>
}

// rng UNIFORM on floats: THREE_FRY bits of a state fixed at import, the top mantissa bits
// under 1.0's exponent, less 1, scaled into [a, b).
// CHECK-LABEL: func.func @uniform(%arg0: tensor<f32>, %arg1: tensor<f32>) -> tensor<4xf32>
// CHECK:         accy.constant dense<1> : tensor<ui64>
// CHECK:         accy.constant dense<1065353216> : tensor<4xui32>
// CHECK:         accy.bitcast_convert %{{.*}} : (tensor<4xui32>) -> tensor<4xf32>
// CHECK:         accy.compare LT
// CHECK:         accy.select
// PLAN-LABEL: func.func @uniform
func.func @uniform(%a: tensor<f32>, %b: tensor<f32>) -> tensor<4xf32> {
  %shape = stablehlo.constant dense<[4]> : tensor<1xi64>
  %r = "stablehlo.rng"(%a, %b, %shape) {rng_distribution = #stablehlo<rng_distribution UNIFORM>} : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
