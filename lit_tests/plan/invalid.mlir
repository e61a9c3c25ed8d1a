// RUN: accy-opt %s --split-input-file --verify-diagnostics

// A hand-edited planned module that breaks a rule of the plan is refused with a located
// error naming the buffers.

// Two buffers live at the same time overlap in the arena.
func.func @overlap(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %arena = accy.arena alignment 16 : memref<64xi8, #accy.space<device_global>>
  %a = accy.view %arena[0] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  // expected-error @+1 {{'accy.view' op %b (bytes [0, 16), live [4, 5]) overlaps %a (bytes [0, 16), live [3, 4]) in the arena while both are live}}
  %b = accy.view %arena[0] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  accy.copy %x to %a : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<device_global>>
  accy.kernel 0 "reduce" ins(%a : memref<4xf32, #accy.space<device_global>>) outs(%b : memref<4xf32, #accy.space<device_global>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  accy.copy %b to %out0 : memref<4xf32, #accy.space<device_global>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// An out-parameter nothing writes.
// expected-error @+1 {{function @unwritten result #0 (%out0) has no kernel writer or backing alias; schedule its producer or provide an input/constant alias}}
func.func @unwritten(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  func.return
}

// -----

// A view past the end of its arena.
func.func @outside(%x: memref<4xf32, #accy.space<host>>) attributes {accy.planned} {
  %arena = accy.arena alignment 16 : memref<64xi8, #accy.space<device_global>>
  // expected-error @+1 {{'accy.view' op bytes [64, 80) lie outside the arena of 64 bytes}}
  %a = accy.view %arena[64] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  func.return
}

// -----

// A view at an offset the arena's alignment does not allow.
func.func @misaligned(%x: memref<4xf32, #accy.space<host>>) attributes {accy.planned} {
  %arena = accy.arena alignment 16 : memref<64xi8, #accy.space<device_global>>
  // expected-error @+1 {{'accy.view' op offset 8 is not a multiple of the arena's alignment 16}}
  %a = accy.view %arena[8] : memref<64xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  func.return
}

// -----

// A kernel that writes a constant's buffer.
func.func @writes_constant(%x: memref<4xf32, #accy.space<host>>) attributes {accy.planned} {
  %c = accy.global dense<1.0> : tensor<4xf32> : memref<4xf32, #accy.space<device_constant>>
  // expected-error @+1 {{'accy.kernel' op outs #0 is a read-only constant buffer}}
  accy.kernel 0 "elementwise" ins() outs(%c : memref<4xf32, #accy.space<device_constant>>) {
    %t = accy.constant dense<2.0> : tensor<4xf32>
    accy.yield %t : tensor<4xf32>
  }
  func.return
}

// -----

// A kernel body that does not read what its buffer stores.
func.func @mismatch(%x: memref<4xf32, #accy.space<host>>, %y: memref<8xf32, #accy.space<host>>) attributes {accy.planned} {
  // expected-error @+1 {{'accy.kernel' op body argument #0 of type tensor<8xf32> is not what ins #0 of type memref<4xf32, #accy.space<host>> stores}}
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%y : memref<8xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<8xf32>):
    accy.yield %t : tensor<8xf32>
  }
  func.return
}

// -----

// A dynamic view that does not say how many rows it was planned for.
func.func @unbounded(%x: memref<?x4xf32, #accy.space<host>>) attributes {accy.planned} {
  %arena = accy.arena alignment 16 : memref<256xi8, #accy.space<host>>
  // expected-error @+1 {{'accy.view' op a view of dynamic type memref<?x4xf32, #accy.space<host>> records the rows it was planned for (max_rows)}}
  %a = accy.view %arena[0] : memref<256xi8, #accy.space<host>> to memref<?x4xf32, #accy.space<host>>
  func.return
}

// -----

// A dynamic view past the end of its arena at the rows it was planned for.
func.func @rows_outside(%x: memref<?x4xf32, #accy.space<host>>) attributes {accy.planned} {
  %arena = accy.arena alignment 16 : memref<256xi8, #accy.space<host>>
  // expected-error @+1 {{'accy.view' op bytes [0, 1024) lie outside the arena of 256 bytes}}
  %a = accy.view %arena[0] max_rows 64 : memref<256xi8, #accy.space<host>> to memref<?x4xf32, #accy.space<host>>
  func.return
}

// -----

// A kernel kind that lowering does not know.
func.func @unknown_kind(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  // expected-error @+1 {{'accy.kernel' op 0 has unknown kind "frobnicate"; kernel kinds: elementwise, broadcast, reshape, transpose, reduce, scan, dot, scatter, fold, sort, window, convolution, attention}}
  accy.kernel 0 "frobnicate" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  func.return
}

// -----

// Two kernels with one id.
func.func @duplicate_ids(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  // expected-error @+1 {{'accy.kernel' op id 0 is used twice in @duplicate_ids; kernel ids are unique in a function}}
  accy.kernel 0 "elementwise" ins(%out0 : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  func.return
}

// -----

// An out-parameter index beyond the function's results.
// expected-error @+1 {{out-parameter %out0 of @output_99 has accy.output = 99, expected 0: out-parameters are numbered 0, 1, ... in argument order, one per result (1 here)}}
func.func @output_99(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 99 : i64}) attributes {accy.planned} {
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// Two out-parameters for one result.
// expected-error @+1 {{out-parameter %out1 of @output_twice has accy.output = 0, expected 1}}
func.func @output_twice(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}, %out1: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.copy %x to %out1 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A call passes the parameters, then the results' arrays: out-parameters come last.
// expected-error @+1 {{parameter %x of @output_first follows an out-parameter; out-parameters come after every parameter}}
func.func @output_first(%out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}, %x: memref<4xf32, #accy.space<host>>) attributes {accy.planned} {
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// An output index that is not an integer.
// expected-error @+1 {{accy.output of %out0 is "first", not a result index}}
func.func @output_named(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = "first"}) attributes {accy.planned} {
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A function that names a target itself (the module's accy.target is the one place).
// expected-error @+1 {{function @tpu has accy.planned = "tpu"; accy.planned is a unit attribute (the module's accy.target names the target)}}
func.func @tpu(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned = "tpu"} {
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A module planned for a target accy does not have.
// expected-error @+1 {{the module's accy.target is "tpu"; known targets: cpu, cuda}}
builtin.module attributes {accy.target = "tpu"} {
  func.func @f(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
    accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
    func.return
  }
}

// -----

// A function that names a target in a module that names one.
builtin.module attributes {accy.target = "cuda"} {
  // expected-error @+1 {{function @f has accy.planned = "cpu"; accy.planned is a unit attribute (the module's accy.target names the target)}}
  func.func @f(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned = "cpu"} {
    accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
    func.return
  }
}

// -----

// An arena alignment that is not a power of two.
func.func @alignment_3(%x: memref<4xf32, #accy.space<host>>) attributes {accy.planned} {
  // expected-error @+1 {{'accy.arena' op alignment 3 is not a power of two}}
  %arena = accy.arena alignment 3 : memref<64xi8, #accy.space<host>>
  func.return
}

// -----

// A kernel whose workspace is a constant's buffer.
func.func @constant_workspace(%x: memref<4xf32, #accy.space<host>>, %out0: memref<f32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %c = accy.global dense<0> : tensor<16xi8> : memref<16xi8, #accy.space<host>>
  // expected-error @+1 {{'accy.kernel' op workspaces #0 is a read-only constant buffer}}
  accy.kernel 0 "reduce" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<f32, #accy.space<host>>) workspaces(%c : memref<16xi8, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %s = accy.reduce add %t, dims = [0] : (tensor<4xf32>) -> tensor<f32>
    accy.yield %s : tensor<f32>
  } {workspace_names = ["partials"]}
  func.return
}

// -----

// A planned module holds planned functions only (lowering would pass this one through).
builtin.module attributes {accy.target = "cpu"} {
  // expected-error @+1 {{function @f of a module planned for "cpu" (accy.target) is not planned (accy.planned); a planned module holds planned functions}}
  func.func @f(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) {
    accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
    func.return
  }
}

// -----

// A kernel that stores nothing.
func.func @no_outs(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  // expected-error @+1 {{'accy.kernel' op writes no buffer; a kernel stores at least one value (outs)}}
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs() {
  ^bb0(%t: tensor<4xf32>):
    accy.yield
  }
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A kernel that stores its input as it is: a copy, not a kernel.
func.func @yields_input(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  // expected-error @+1 {{'accy.kernel' op yielded value #0 is not computed by its body (a kernel computes what it stores; an input passes to an output by an 'accy.copy')}}
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    accy.yield %t : tensor<4xf32>
  }
  func.return
}

// -----

// Scratch in an out-parameter still live when a kernel writes that out-parameter.
func.func @scratch_live(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4x4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %scratch = accy.arena alignment 16 in %out0 : memref<4x4xf32, #accy.space<host>> : memref<64xi8, #accy.space<host>>
  // expected-error @+1 {{'accy.view' op %e (live [2, 3]) lies in out-parameter %out0, which 'accy.kernel' op 1 touches at 3; an arena in an out-parameter holds buffers that die before anything touches it}}
  %e = accy.view %scratch[16] : memref<64xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%e : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %y = accy.exponential %t : tensor<4xf32>
    accy.yield %y : tensor<4xf32>
  }
  accy.kernel 1 "broadcast" ins(%e : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4x4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %y = accy.broadcast_in_dim %t, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
    accy.yield %y : tensor<4x4xf32>
  }
  func.return
}

// -----

// An arena larger than the out-parameter it lies in.
func.func @scratch_too_large(%out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  // expected-error @+1 {{'accy.arena' op an arena of 64 bytes does not fit in its out-parameter of 16 bytes}}
  %scratch = accy.arena alignment 16 in %out0 : memref<4xf32, #accy.space<host>> : memref<64xi8, #accy.space<host>>
  func.return
}

// -----

// An out-parameter that takes over a parameter the caller does not donate.
// expected-error @+1 {{out-parameter %out0 takes over %x (accy.donor), which is not a donated parameter of its type memref<4xf32, #accy.space<host>>}}
func.func @not_donated(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64, accy.donor = 0 : i64}) attributes {accy.planned} {
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %y = accy.negate %t : tensor<4xf32>
    accy.yield %y : tensor<4xf32>
  }
  func.return
}

// -----

// A donated parameter read after the out-parameter that takes it over is written.
func.func @read_after_donor_written(%x: memref<4xf32, #accy.space<host>> {accy.donated}, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64, accy.donor = 0 : i64}, %out1: memref<4xf32, #accy.space<host>> {accy.output = 1 : i64}) attributes {accy.planned} {
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %y = accy.negate %t : tensor<4xf32>
    accy.yield %y : tensor<4xf32>
  }
  // expected-error @+1 {{'accy.kernel' op 1 reads %x (ins #0) after 'accy.kernel' op 0 wrote %out0 over its bytes (a write clobbers every buffer that shares its bytes)}}
  accy.kernel 1 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out1 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %y = accy.exponential %t : tensor<4xf32>
    accy.yield %y : tensor<4xf32>
  }
  func.return
}
