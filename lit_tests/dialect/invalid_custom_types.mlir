// RUN: accy-opt %s --split-input-file --verify-diagnostics
// Types that break an op's constraints in the custom syntax fail while the op is built;
// they are located diagnostics like any verifier error.


func.func @f8_add(%a: tensor<4xf8E5M2>) {
  // expected-error @+1 {{'accy.add' op Unexpected attribute f8E5M2}}
  %0 = accy.add %a, %a : tensor<4xf8E5M2>
  func.return
}

// -----

func.func @i4_constant() {
  // expected-error @+1 {{'accy.constant' op i4 is not an integer type accy computes with}}
  %0 = accy.constant dense<1> : tensor<2xi4>
  func.return
}

// -----

func.func @compare_operand_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'accy.compare' op attribute tensor<4xf32> expected from variable 'T', but got tensor<4xi32>}}
  %0 = accy.compare LT, %a, %b : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @dot_element_types(%l: tensor<2x3xf32>, %r: tensor<3x4xf16>) {
  // expected-error @+1 {{'accy.dot_general' op attribute f32 expected from variable 'T', but got f16}}
  %0 = accy.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @not_a_tensor(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.broadcast_in_dim' op memref<4xf32> should be of base attribute tensor}}
  %0 = accy.broadcast_in_dim %a, dims = [0] : (tensor<4xf32>) -> memref<4xf32>
  func.return
}

