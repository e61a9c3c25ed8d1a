// RUN: accy-opt %s --split-input-file --verify-diagnostics

// Syntax errors: each prints one `file:line:col: error: message` line. The positions are
// where xDSL's parser stops, so some point past the mistake (noted below).

func.func @unknown_op(%a: tensor<4xf32>) {
  // The position is the token after the op name.
  // expected-error @+1 {{Operation accy.frob is not registered}}
  %0 = accy.frob %a : tensor<4xf32>
  func.return
}

// -----

func.func @unknown_dialect(%a: tensor<4xf32>) {
  // expected-error @+1 {{Operation foo.bar is not registered}}
  %0 = foo.bar %a : tensor<4xf32>
  func.return
}

// -----

func.func @missing_type(%a: tensor<4xf32>) {
  %0 = accy.add %a, %a
  // expected-error @+1 {{Expected ':'}}
  func.return
}

// -----

func.func @undefined_value(%a: tensor<4xf32>) {
  %0 = accy.add %a, %zz : tensor<4xf32>
  func.return
// The position is the end of the input (here of the chunk, at the next separator).
// expected-error @+3 {{values used but not defined: [%zz]}}
}

// -----

func.func @operand_type(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{operand is used with type tensor<4xf32>, but has been previously used or defined with type tensor<4xf16>}}
  %0 = accy.add %a, %b : tensor<4xf32>
  func.return
}

// -----

func.func @redefined_value(%a: tensor<4xf32>) {
  %0 = accy.add %a, %a : tensor<4xf32>
  // expected-error @+1 {{SSA value %0 is already defined}}
  %0 = accy.add %a, %a : tensor<4xf32>
  func.return
}

// -----

func.func @comparison_direction(%a: tensor<4xf32>) {
  // expected-error @+1 {{Expected `EQ`, `NE`, `LT`, `LE`, `GT`, or `GE`.}}
  %0 = accy.compare XX, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @combiner(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{Expected `add`, `max`, `min`, or `mul`.}}
  %0 = accy.reduce sum %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @dim_list(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{Expected integer literal}}
  %0 = accy.transpose %a, dims = [x, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @dims_keyword(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{Expected 'dims'}}
  %0 = accy.transpose %a, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @dim_pair(%l: tensor<2x3xf32>, %r: tensor<3x4xf32>) {
  // expected-error @+1 {{Expected 'x'}}
  %0 = accy.dot_general %l, %r, batching_dims = [] [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @scan_dim(%a: tensor<4xf32>) {
  // expected-error @+1 {{Expected integer literal}}
  %0 = accy.scan add %a, %a, dim = x : tensor<4xf32>
  func.return
}

// -----

func.func @iterate_negative_trip_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{Expected integer literal}}
  %r = accy.iterate -1 iter_args(%p = %a) : tensor<4xf32> {
    accy.yield %p : tensor<4xf32>
  }
  func.return
}

// -----

func.func @iterate_keyword(%a: tensor<4xf32>) {
  // expected-error @+1 {{Expected 'iter_args'}}
  %r = accy.iterate 2 (%p = %a) : tensor<4xf32> {
    accy.yield %p : tensor<4xf32>
  }
  func.return
}

// -----

func.func @iterate_type_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected 2 types for the iter_args, got 1}}
  %r = accy.iterate 2 iter_args(%p = %a, %q = %a) : tensor<4xf32> {
    accy.yield %p : tensor<4xf32>
  }
  func.return
}

// -----

func.func @dense_shape(%a: tensor<4xf32>) {
  // The position is the literal's first bracket.
  // expected-error @+1 {{Shape mismatch in dense literal. Expected [3] shape from the type, but got [2] shape.}}
  %0 = accy.constant dense<[1.0, 2.0]> : tensor<3xf32>
  func.return
}

// -----

func.func @dense_ragged() {
  // expected-error @+1 {{Tensor literal has inconsistent ranks between elements}}
  %0 = accy.constant dense<[[1.0, 2.0], [3.0]]> : tensor<2x2xf32>
  func.return
}

// -----

func.func @dense_empty_element() {
  // expected-error @+1 {{Expected either a float, integer, or complex literal}}
  %0 = accy.constant dense<[1.0, , 2.0]> : tensor<3xf32>
  func.return
}

// -----

func.func @dense_float_for_integer() {
  // expected-error @+1 {{Expected integer value}}
  %0 = accy.constant dense<[1, 2.5]> : tensor<2xi32>
  func.return
}

// -----

// Nesting deeper than accy reads (128 levels of brackets in all) is an error at the
// first bracket too many, wherever it is: here the literal's 127th `[`, inside
// `func.func {` and `dense<`, then the 129th `(` of a type.
func.func @dense_too_deep() {
  // expected-error @+1 {{nesting deeper than 128 levels of brackets}}
  %0 = accy.constant dense<[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1.0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]> : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>
  func.return
}

// -----

func.func private @type_too_deep(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((
// expected-error @-1 {{nesting deeper than 128 levels of brackets}}

// -----

func.func @stray_token(%a: tensor<4xf32>) {
  // expected-error @+1 {{@ identifier expected to start with letter, '_', or '"'.}}
  %0 = accy.add %a, %a : tensor<4xf32> @
  func.return
}

// -----

func.func @extra_brace(%a: tensor<4xf32>) {
  func.return
}
// expected-error @+1 {{Could not parse entire input!}}
}

// -----
// Constants out of their type's range: the error is at the element (accy reads dense literals
// of integers and floats itself).

func.func @i1_of_two() -> tensor<2xi1> {
  // expected-error @+1 {{invalid attribute: Integer value 2 is out of range for type i1 which supports values in the range [-1, 2)}}
  %0 = accy.constant dense<[1, 2]> : tensor<2xi1>
  func.return %0 : tensor<2xi1>
}

// -----

func.func @i64_too_large() -> tensor<i64> {
  // expected-error @+1 {{invalid attribute: Integer value 99999999999999999999 is out of range for type i64}}
  %0 = accy.constant dense<99999999999999999999> : tensor<i64>
  func.return %0 : tensor<i64>
}

// -----

func.func @f32_overflow() -> tensor<f32> {
  // expected-error @+1 {{invalid attribute: Float value 1.0e39 is out of range for type f32 (its largest finite value is 3.4028234663852886e+38)}}
  %0 = accy.constant dense<1.0e39> : tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @f16_overflow() -> tensor<2xf16> {
  // 65520 is halfway between f16's largest value, 65504, and the next step: it rounds away.
  // expected-error @+1 {{invalid attribute: Float value -65520.0 is out of range for type f16 (its largest finite value is 65504.0)}}
  %0 = accy.constant dense<[65519.99, -65520.0]> : tensor<2xf16>
  func.return %0 : tensor<2xf16>
}

// -----

func.func @ui32_negative() -> tensor<2xui32> {
  // expected-error @+1 {{Expected non-negative integer values}}
  %0 = accy.constant dense<[1, -1]> : tensor<2xui32>
  func.return %0 : tensor<2xui32>
}

// -----

// A splat constant is a few characters of text for any number of elements: large ones are
// refused before xDSL materializes them.
func.func @huge_splat() -> tensor<2147483648xf32> {
  // expected-error @+1 {{a splat constant of 2147483648 elements; accy holds constants in memory, up to 268435456 elements (2**28)}}
  %0 = accy.constant dense<1.0> : tensor<2147483648xf32>
  func.return %0 : tensor<2147483648xf32>
}

// -----

// expected-error @+1 {{Unexpected character: $}}
$

// -----

// Dimension numbers and slice bounds are i64 (found by the fuzzer: a ValueError from xDSL).
func.func @dim_beyond_i64(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{integer 99999999999999999999 does not fit in i64}}
  %0 = accy.reduce add %a, dims = [99999999999999999999] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @slice_bound_beyond_i64(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{integer -99999999999999999999 does not fit in i64}}
  %0 = accy.slice %a [-99999999999999999999:2] : (tensor<4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
