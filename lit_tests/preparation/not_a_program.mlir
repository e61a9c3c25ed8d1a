// RUN: accy-opt %s --split-input-file --verify-diagnostics -p accy-plan-shapes

// What the planner takes: functions directly in the module, with a body, on ranked tensors of
// accy element types. Such modules verify (a lowered module is one), but no analysis runs on
// them.

// expected-error @+1 {{'func.func' op argument #0 has type tensor<4xui4>; accy functions take and return ranked tensors of f64, f32, f16, bf16, i1, i8, i16, i32, i64, ui8, ui16, ui32, ui64}}
func.func @sub_byte_parameter(%a: tensor<4xui4>) {
  func.return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 has type memref<4xf32>: a lowered function (accy-lower made it); accy plans programs on tensors, before lowering}}
func.func @memref_argument(%a: memref<4xf32>) -> memref<4xf32> {
  func.return %a : memref<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op @external is a declaration; accy compiles functions with a body}}
func.func private @external(tensor<4xf32>) -> tensor<4xf32>

// -----

func.func @outer(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.func' op @inner is nested in 'func.func'; accy functions sit directly in the module}}
  func.func @inner(%b: tensor<4xf32>) -> tensor<4xf32> {
    func.return %b : tensor<4xf32>
  }
  func.return %a : tensor<4xf32>
}

// -----

func.func @callee(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.call' op calls @callee; accy plans each function on its own and does not call between them: write the callee's ops in place (the StableHLO importer inlines the calls JAX writes)}}
  %0 = func.call @callee(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @upstream_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.addf' op is not an accy op; accy functions hold accy ops and func.return}}
  %0 = arith.addf %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
