// RUN: accy-opt --import-stablehlo --split-input-file --verify-diagnostics %s

// expected-error @+3 {{'stablehlo.custom_call' is not supported by the StableHLO importer}}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  %1 = stablehlo.custom_call @opaque(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// The location of JAX's debug info wins over the text position.
// expected-error @unknown {{'stablehlo.custom_call' is not supported by the StableHLO importer}}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.custom_call"(%a) {call_target_name = "opaque"} : (tensor<4xf32>) -> tensor<4xf32> loc(#site)
  return %0 : tensor<4xf32>
}
#site = loc("jit(f)/opaque"("model.py":42:7))

// -----

// expected-error @+2 {{use of undeclared SSA value name}}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A reduce body computes on scalars with elementwise ops only.
// expected-error @+3 {{'accy.fold' op body holds 'accy.reshape'; it may hold elementwise ops, compare, select, convert and constants}}
func.func @main(%a: tensor<4xi32>) -> tensor<i32> {
  %z = stablehlo.constant dense<-1> : tensor<i32>
  %0 = stablehlo.reduce(%a init: %z) across dimensions = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
   reducer(%x: tensor<i32>, %y: tensor<i32>)  {
    %r = stablehlo.reshape %x : (tensor<i32>) -> tensor<i32>
    stablehlo.return %r : tensor<i32>
  }
  return %0 : tensor<i32>
}
