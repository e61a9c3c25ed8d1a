// RUN: accy-opt %s --split-input-file --verify-diagnostics

// One chunk per verifier rule of every accy op. Each diagnostic names the file, the line
// and column where the op's text starts, and the op. Rules that IRDL constraints check
// (operand types tied by a type variable, element types) are written in the generic form:
// the custom syntax derives the types from its type list. (A chunk of only comments is an
// empty module, as in mlir-opt, and passes.)

// Elementwise binary: both operands and the result have one type.

func.func @binary_operand_types(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'accy.add' op operand 'rhs' at position 1 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<3xf32>}}
  %0 = "accy.add"(%a, %b) : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @binary_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.subtract' op result 'result' at position 0 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>}}
  %0 = "accy.subtract"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----
// Element types are f64, f32, f16, bf16, i1, i8, i16, i32, i64, ui8, ui16, ui32 and ui64.

func.func @unsupported_element_type(%a: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{'accy.multiply' op operand 'lhs' at position 0 does not verify: Unexpected attribute f8E4M3FN}}
  %0 = "accy.multiply"(%a, %a) : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  func.return
}

// -----
// No arithmetic on i1.

func.func @binary_on_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'accy.add' op does not compute on i1 tensors}}
  %0 = accy.add %a, %a : tensor<4xi1>
  func.return
}

// -----

func.func @power_on_i1(%a: tensor<2x2xi1>) {
  // expected-error @+1 {{'accy.power' op does not compute on i1 tensors}}
  %0 = accy.power %a, %a : tensor<2x2xi1>
  func.return
}

// -----
// Elementwise unary: negate and abs take numbers, the others only floats.

func.func @negate_on_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'accy.negate' op expects a numeric element type, got i1}}
  %0 = accy.negate %a : tensor<4xi1>
  func.return
}

// -----

func.func @abs_on_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'accy.abs' op expects a numeric element type, got i1}}
  %0 = accy.abs %a : tensor<4xi1>
  func.return
}

// -----

func.func @exponential_on_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{'accy.exponential' op expects a floating-point element type, got i32}}
  %0 = accy.exponential %a : tensor<4xi32>
  func.return
}

// -----

func.func @log_on_int(%a: tensor<4xi64>) {
  // expected-error @+1 {{'accy.log' op expects a floating-point element type, got i64}}
  %0 = accy.log %a : tensor<4xi64>
  func.return
}

// -----

func.func @tanh_on_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'accy.tanh' op expects a floating-point element type, got i1}}
  %0 = accy.tanh %a : tensor<4xi1>
  func.return
}

// -----

func.func @sqrt_on_int(%a: tensor<?xi32>) {
  // expected-error @+1 {{'accy.sqrt' op expects a floating-point element type, got i32}}
  %0 = accy.sqrt %a : tensor<?xi32>
  func.return
}

// -----

func.func @rsqrt_on_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{'accy.rsqrt' op expects a floating-point element type, got i32}}
  %0 = accy.rsqrt %a : tensor<4xi32>
  func.return
}

// -----

func.func @logistic_on_int(%a: tensor<4xi64>) {
  // expected-error @+1 {{'accy.logistic' op expects a floating-point element type, got i64}}
  %0 = accy.logistic %a : tensor<4xi64>
  func.return
}

// -----

func.func @unary_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.negate' op result 'result' at position 0 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<2xf32>}}
  %0 = "accy.negate"(%a) : (tensor<4xf32>) -> tensor<2xf32>
  func.return
}

// -----
// Compare: operands of one type, a result of i1 with their shape.

func.func @compare_result_not_i1(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.compare' op result must have element type i1, got tensor<4xf32>}}
  %0 = accy.compare LT, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @compare_result_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.compare' op result shape [5] differs from operand shape [4]}}
  %0 = accy.compare EQ, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xi1>
  func.return
}

// -----

func.func @compare_operand_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'accy.compare' op operand 'rhs' at position 1 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xi32>}}
  %0 = "accy.compare"(%a, %b) <{direction = #accy<comparison_direction LT>}> : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----
// Select: an i1 predicate of the result's shape, both branches of the result's type.

func.func @select_predicate_not_i1(%p: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.select' op predicate must have element type i1, got tensor<4xi32>}}
  %0 = accy.select %p, %a, %a : tensor<4xi32>, tensor<4xf32>
  func.return
}

// -----

func.func @select_predicate_shape(%p: tensor<2xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.select' op predicate shape [2] differs from result shape [4]}}
  %0 = accy.select %p, %a, %a : tensor<2xi1>, tensor<4xf32>
  func.return
}

// -----

func.func @select_branch_types(%p: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'accy.select' op operand 'on_false' at position 2 does not verify: attribute tensor<4xf32> expected from variable 'T', but got tensor<4xi32>}}
  %0 = "accy.select"(%p, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return
}

// -----
// Convert keeps the shape.

func.func @convert_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.convert' op result shape [2, 2] differs from operand shape [4]}}
  %0 = accy.convert %a : (tensor<4xf32>) -> tensor<2x2xi32>
  func.return
}

// -----
// Constant: a static shape, the value's type is the result type. A dense literal of a
// dynamic shape is already refused by xDSL's attribute parser, which reports the position
// of the token after the type (here `func.return`), not the constant.

func.func @constant_dynamic_shape() {
  // expected-error @+2 {{Dense literal attribute should have a static shape.}}
  %0 = accy.constant dense<1.0> : tensor<?xf32>
  func.return
}

// -----

func.func @constant_dynamic_result() {
  // expected-error @+1 {{'accy.constant' op attribute tensor<?xf32> expected from variable 'T', but got tensor<2xf32>}}
  %0 = "accy.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<?xf32>
  func.return
}

// -----

func.func @constant_result_type() {
  // expected-error @+1 {{'accy.constant' op attribute tensor<3xf32> expected from variable 'T', but got tensor<2xf32>}}
  %0 = "accy.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----
// broadcast_in_dim: one dim per operand dim, distinct, in range, of a matching size (or 1).

func.func @broadcast_element_type(%a: tensor<3xf32>) {
  // expected-error @+1 {{'accy.broadcast_in_dim' op operand and result element types differ}}
  %0 = accy.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xi32>
  func.return
}

// -----

func.func @broadcast_dims_count(%a: tensor<3xf32>) {
  // expected-error @+1 {{'accy.broadcast_in_dim' op has 2 broadcast dims for an operand of rank 1}}
  %0 = accy.broadcast_in_dim %a, dims = [0, 1] : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @broadcast_dims_repeat(%a: tensor<3x3xf32>) {
  // expected-error @+1 {{'accy.broadcast_in_dim' op broadcast dims [1, 1] repeat a dim}}
  %0 = accy.broadcast_in_dim %a, dims = [1, 1] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----

func.func @broadcast_dim_range(%a: tensor<3xf32>) {
  // expected-error @+1 {{'accy.broadcast_in_dim' op broadcast dim 2 is out of range for a result of rank 2}}
  %0 = accy.broadcast_in_dim %a, dims = [2] : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @broadcast_dim_negative(%a: tensor<3xf32>) {
  // expected-error @+1 {{'accy.broadcast_in_dim' op broadcast dim -1 is out of range for a result of rank 2}}
  %0 = accy.broadcast_in_dim %a, dims = [-1] : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @broadcast_dim_size(%a: tensor<3xf32>) {
  // expected-error @+1 {{'accy.broadcast_in_dim' op operand dim 0 of size 3 cannot broadcast to result dim 0 of size 2}}
  %0 = accy.broadcast_in_dim %a, dims = [0] : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
// reshape: same element type and element count.

func.func @reshape_element_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.reshape' op operand and result element types differ}}
  %0 = accy.reshape %a : (tensor<2x3xf32>) -> tensor<6xi32>
  func.return
}

// -----

func.func @reshape_element_count(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.reshape' op cannot reshape 6 elements [2, 3] into 7 elements [7]}}
  %0 = accy.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return
}

// -----
// transpose: a permutation of the operand dims, the permuted shape, the same element type.

func.func @transpose_repeated_dim(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.transpose' op dims [0, 0] are not a permutation of the operand's 2 dims}}
  %0 = accy.transpose %a, dims = [0, 0] : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @transpose_too_many_dims(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.transpose' op dims [1, 0, 2] are not a permutation of the operand's 2 dims}}
  %0 = accy.transpose %a, dims = [1, 0, 2] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @transpose_result_shape(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.transpose' op result shape [2, 3] differs from the permuted shape [3, 2]}}
  %0 = accy.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @transpose_element_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.transpose' op operand and result element types differ}}
  %0 = accy.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf16>
  func.return
}

// -----
// reduce: distinct dims in range, the kept shape, the same element type.

func.func @reduce_dim_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.reduce' op dims [2] must be distinct dims of the operand's 2 dims}}
  %0 = accy.reduce add %a, dims = [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_dim_repeat(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.reduce' op dims [1, 1] must be distinct dims of the operand's 2 dims}}
  %0 = accy.reduce min %a, dims = [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_result_shape(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.reduce' op result shape [3] differs from the kept shape [2]}}
  %0 = accy.reduce add %a, dims = [1] : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @reduce_element_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.reduce' op operand and result element types differ}}
  %0 = accy.reduce max %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2xi32>
  func.return
}

// -----
// dot_general: paired dims of equal count, in range, of equal sizes, not overlapping; the
// result is batch dims, lhs free dims, rhs free dims; one element type.

func.func @dot_batching_count(%l: tensor<8x2x3xf32>, %r: tensor<8x3x4xf32>) {
  // expected-error @+1 {{'accy.dot_general' op batching dims [0] x [] differ in length}}
  %0 = accy.dot_general %l, %r, batching_dims = [0] x [], contracting_dims = [2] x [1] : (tensor<8x2x3xf32>, tensor<8x3x4xf32>) -> tensor<8x2x4xf32>
  func.return
}

// -----

func.func @dot_contracting_range(%l: tensor<2x3xf32>, %r: tensor<3x4xf32>) {
  // expected-error @+1 {{'accy.dot_general' op contracting dims [2] x [0] are out of range}}
  %0 = accy.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @dot_contracting_sizes(%l: tensor<2x3xf32>, %r: tensor<5x4xf32>) {
  // expected-error @+1 {{'accy.dot_general' op contracting dim sizes differ: lhs dim 1 is 3, rhs dim 0 is 5}}
  %0 = accy.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @dot_batching_sizes(%l: tensor<8x2x3xf32>, %r: tensor<7x3x4xf32>) {
  // expected-error @+1 {{'accy.dot_general' op batching dim sizes differ: lhs dim 0 is 8, rhs dim 0 is 7}}
  %0 = accy.dot_general %l, %r, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x2x3xf32>, tensor<7x3x4xf32>) -> tensor<8x2x4xf32>
  func.return
}

// -----

func.func @dot_dims_overlap(%l: tensor<3x3xf32>, %r: tensor<3x3xf32>) {
  // expected-error @+1 {{'accy.dot_general' op lhs batching and contracting dims overlap}}
  %0 = accy.dot_general %l, %r, batching_dims = [0] x [0], contracting_dims = [0] x [1] : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----

func.func @dot_result_shape(%l: tensor<2x3xf32>, %r: tensor<3x4xf32>) {
  // expected-error @+1 {{'accy.dot_general' op result shape [4, 2] differs from the expected [2, 4]}}
  %0 = accy.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @dot_element_types(%l: tensor<2x3xf32>, %r: tensor<3x4xf16>) {
  // expected-error @+1 {{'accy.dot_general' op operand 'rhs' at position 1 does not verify: attribute f32 expected from variable 'T', but got f16}}
  %0 = "accy.dot_general"(%l, %r) <{lhs_batching_dimensions = array<i64>, rhs_batching_dimensions = array<i64>, lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>}> : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  func.return
}

// -----
// scan: a dim in range; operand, scratch and result of one type.

func.func @scan_dim_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.scan' op dim 2 is out of range for rank 2}}
  %0 = accy.scan add %a, %a, dim = 2 : tensor<2x3xf32>
  func.return
}

// -----

func.func @scan_dim_negative(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'accy.scan' op dim -1 is out of range for rank 2}}
  %0 = accy.scan max %a, %a, dim = -1 : tensor<2x3xf32>
  func.return
}

// -----

func.func @scan_scratch_type(%a: tensor<2x3xf32>, %s: tensor<3x2xf32>) {
  // expected-error @+1 {{'accy.scan' op operand 'scratch' at position 1 does not verify: attribute tensor<2x3xf32> expected from variable 'T', but got tensor<3x2xf32>}}
  %0 = "accy.scan"(%a, %s) <{kind = #accy<combiner add>, dimension = 1 : i64}> : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----
// iterate: a trip count >= 0; iter_args, block arguments, results and yielded values
// agree in number and type; the body ends with accy.yield; accy.yield lives in iterate.

func.func @iterate_negative_trip_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.iterate' op trip count -1 is negative}}
  %r = "accy.iterate"(%a) <{trip_count = -1 : i64}> ({
  ^bb0(%p: tensor<4xf32>):
    "accy.yield"(%p) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @iterate_block_argument_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.iterate' op iter_args, block arguments and results must have the same types}}
  %r = "accy.iterate"(%a) <{trip_count = 2 : i64}> ({
  ^bb0(%p: tensor<3xf32>):
    "accy.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @iterate_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.iterate' op iter_args, block arguments and results must have the same types}}
  %r = "accy.iterate"(%a) <{trip_count = 2 : i64}> ({
  ^bb0(%p: tensor<4xf32>):
    "accy.yield"(%p) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @iterate_yield_too_many(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.iterate' op yields 2 values of types (tensor<4xf32>, tensor<4xf32>) but carries (tensor<4xf32>)}}
  %r = accy.iterate 2 iter_args(%p = %a) : tensor<4xf32> {
    accy.yield %p, %p : tensor<4xf32>, tensor<4xf32>
  }
  func.return
}

// -----

func.func @iterate_yield_none(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.iterate' op yields 0 values of types () but carries (tensor<4xf32>)}}
  %r = accy.iterate 2 iter_args(%p = %a) : tensor<4xf32> {
    accy.yield
  }
  func.return
}

// -----

func.func @iterate_yield_type(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'accy.iterate' op yields 1 values of types (tensor<4xi32>) but carries (tensor<4xf32>)}}
  %r = accy.iterate 2 iter_args(%p = %a) : tensor<4xf32> {
    accy.yield %b : tensor<4xi32>
  }
  func.return
}

// -----

func.func @iterate_without_yield(%a: tensor<4xf32>) {
  %r = accy.iterate 2 iter_args(%p = %a) : tensor<4xf32> {
    // expected-error @+1 {{'accy.add' op terminates block in single-block region but is not a terminator}}
    %x = accy.add %p, %p : tensor<4xf32>
  }
  func.return
}

// -----

func.func @yield_outside_iterate(%a: tensor<4xf32>) {
  // expected-error @+1 {{'accy.yield' op expects parent op to be one of 'accy.iterate', 'accy.while', 'accy.scatter', 'accy.fold', 'accy.sort', 'accy.reduce_window', 'accy.select_and_scatter', 'accy.kernel'}}
  accy.yield %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument #1 has accy.donated = 1 : i64; it is a unit attribute, written {accy.donated}}}
func.func @donated_with_a_value(%a: tensor<4xf32>, %b: tensor<4xf32> {accy.donated = 1 : i64}) {
  func.return
}


// -----
// Every operand is defined before its use.

func.func @use_before_definition(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.negate' op operand #0 is used before it is defined (or outside the region that defines it)}}
  %1 = accy.negate %0 : tensor<4xf32>
  %0 = accy.abs %a : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

func.func @reverse_twice(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.reverse' op dims [1, 1] are not distinct dims of the operand's 2 dims}}
  %r = accy.reverse %x, dims = [1, 1] : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

func.func @pad_shape(%x: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{'accy.pad' op result shape [3, 3] differs from the padded shape [3, 5]}}
  %p = accy.pad %x, %v, low = [1, 0], high = [0, 0], interior = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x3xf32>
  func.return %p : tensor<3x3xf32>
}

// -----

func.func @pad_value(%x: tensor<2x3xf32>, %v: tensor<1xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.pad' op padding value tensor<1xf32> is not a rank-0 tensor of the operand's element type}}
  %p = accy.pad %x, %v, low = [0, 0], high = [0, 0], interior = [0, 0] : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  func.return %p : tensor<2x3xf32>
}

// -----

func.func @pad_interior(%x: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.pad' op interior padding [0, -1] is negative}}
  %p = accy.pad %x, %v, low = [0, 0], high = [0, 2], interior = [0, -1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %p : tensor<2x3xf32>
}

// -----

func.func @dynamic_slice_too_big(%x: tensor<4x3xf32>, %i: tensor<i64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.dynamic_slice' op size 4 of dim 1 is not within its extent 3}}
  %r = accy.dynamic_slice %x[%i, %i], sizes = [2, 4] : (tensor<4x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

func.func @dynamic_slice_float_start(%x: tensor<4x3xf32>, %i: tensor<i64>, %f: tensor<f32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'accy.dynamic_slice' op start index #1 of type tensor<f32> is not a rank-0 integer tensor}}
  %r = accy.dynamic_slice %x[%i, %f], sizes = [2, 2] : (tensor<4x3xf32>, tensor<i64>, tensor<f32>) -> tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}

// -----

func.func @update_too_big(%x: tensor<4x3xf32>, %u: tensor<2x4xf32>, %i: tensor<i64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'accy.dynamic_update_slice' op update dim 1 of size 4 does not fit the operand's 3}}
  %r = accy.dynamic_update_slice %x, %u[%i, %i] : (tensor<4x3xf32>, tensor<2x4xf32>, tensor<i64>, tensor<i64>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----
// Windows and convolutions: window attributes name every dim; only untouched dims may
// be dynamic; a select_and_scatter's source holds one element per window; a
// convolution's features match its kernel's times the feature groups.

func.func @reduce_window_lists(%x: tensor<4x6xf32>, %m: tensor<f32>) {
  // expected-error @+1 {{'accy.reduce_window' op window_strides has 1 entries for 2 dims}}
  %0 = "accy.reduce_window"(%x, %m) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding_low = array<i64: 0, 0>, padding_high = array<i64: 0, 0>, operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = accy.maximum %a, %b : tensor<f32>
    accy.yield %r : tensor<f32>
  }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @reduce_window_dynamic(%x: tensor<?x6xf32>, %m: tensor<f32>) {
  // expected-error @+1 {{'accy.reduce_window' op windows dynamic dim 0 of tensor<?x6xf32>; accy windows static dims only}}
  %0 = accy.reduce_window(%x : tensor<?x6xf32>) init(%m : tensor<f32>), window = [2, 1], strides = [1, 1], base_dilations = [1, 1], window_dilations = [1, 1], padding_low = [1, 0], padding_high = [0, 0] -> (tensor<?x6xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = accy.add %a, %b : tensor<f32>
    accy.yield %r : tensor<f32>
  }
  func.return
}

// -----

func.func @select_and_scatter_source(%x: tensor<4x4xf32>, %s: tensor<3x2xf32>, %m: tensor<f32>) {
  // expected-error @+1 {{'accy.select_and_scatter' op source shape [3, 2] differs from the operand's windows [2, 2]}}
  %0 = accy.select_and_scatter %x, %s, %m, window = [2, 2], strides = [2, 2], padding_low = [0, 0], padding_high = [0, 0] : (tensor<4x4xf32>, tensor<3x2xf32>, tensor<f32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = accy.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %ge : tensor<i1>
  } {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = accy.add %a, %b : tensor<f32>
    accy.yield %sum : tensor<f32>
  }
  func.return
}

// -----

func.func @convolution_features(%x: tensor<1x8x8x6xf32>, %w: tensor<3x3x4x8xf32>) {
  // expected-error @+1 {{'accy.convolution' op input features 6 differ from the kernel's input features 4 times feature_groups 1}}
  %0 = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [0, 0], padding_high = [0, 0], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<1x8x8x6xf32>, tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32>
  func.return
}

// -----

func.func @convolution_layout(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) {
  // expected-error @+1 {{'accy.convolution' op lhs_dims [0, 3, 1, 1] is not a permutation of the 4 dims}}
  %0 = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 1], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [0, 0], padding_high = [0, 0], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32>
  func.return
}

// -----

func.func @convolution_result(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) {
  // expected-error @+1 {{'accy.convolution' op result shape [1, 8, 8, 8] differs from the expected [1, 6, 6, 8]}}
  %0 = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [0, 0], padding_high = [0, 0], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32>
  func.return
}

// -----
// A while's cond yields one tensor<i1>.

func.func @while_condition(%x: tensor<4xf32>) {
  // expected-error @+1 {{'accy.while' op cond must end in an accy.yield of one tensor<i1>}}
  %r = accy.while (%x : tensor<4xf32>) -> (tensor<4xf32>) cond {
  ^bb0(%c: tensor<4xf32>):
    accy.yield %c : tensor<4xf32>
  } do {
  ^bb0(%b: tensor<4xf32>):
    accy.yield %b : tensor<4xf32>
  }
  func.return
}
