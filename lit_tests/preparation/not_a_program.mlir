// RUN: accy-opt %s --split-input-file --verify-diagnostics -p accy-plan-shapes

// What the planner takes: functions directly in the module, with a body, on ranked tensors of
// accy element types. Such modules verify (a lowered module is one), but no analysis runs on
// them.

// expected-error @+1 {{'func.func' op argument #0 has type tensor<4xui32>; accy functions take and return ranked tensors of f32, f16, bf16, i1, i32 or i64}}
func.func @unsigned_parameter(%a: tensor<4xui32>) {
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
