// RUN: accy-opt %s --split-input-file --verify-diagnostics

// Hand-written planned functions whose kernels and copies write a parameter or read a
// buffer that holds nothing are refused, each at the op concerned, naming the buffer.

// A kernel that updates a parameter in place would overwrite the caller's array.
func.func @writes_parameter(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  // expected-error @+1 {{'accy.kernel' op 0 writes the parameter %x (outs #0); parameters are the caller's arrays and are never written (work on a copy of it)}}
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%x : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A copy into a parameter (CUDA: the device result copied back over the input).
func.func @copies_into_parameter(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %arena = accy.arena alignment 256 : memref<512xi8, #accy.space<device_global>>
  %a = accy.view %arena[0] : memref<512xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  %b = accy.view %arena[256] : memref<512xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
  accy.copy %x to %a : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<device_global>>
  accy.kernel 0 "elementwise" ins(%a : memref<4xf32, #accy.space<device_global>>) outs(%b : memref<4xf32, #accy.space<device_global>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  accy.copy %b to %out0 : memref<4xf32, #accy.space<device_global>> to memref<4xf32, #accy.space<host>>
  // expected-error @+1 {{'accy.copy' op writes the parameter %x (its target); parameters are the caller's arrays and are never written (work on a copy of it)}}
  accy.copy %b to %x : memref<4xf32, #accy.space<device_global>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A donated parameter is no exception: on CUDA the kernel updates the device arena's copy.
func.func @writes_donated_parameter(%x: memref<4xf32, #accy.space<host>> {accy.donated}, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  // expected-error @+1 {{'accy.copy' op writes the parameter %x (its target)}}
  accy.copy %out0 to %x : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A kernel that reads an arena view nothing wrote computes garbage.
func.func @reads_unwritten(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %arena = accy.arena alignment 64 : memref<64xi8, #accy.space<host>>
  %a = accy.view %arena[0] : memref<64xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  // expected-error @+1 {{'accy.kernel' op 0 reads %a (ins #1) before any kernel or copy writes it}}
  accy.kernel 0 "elementwise" ins(%x, %a : memref<4xf32, #accy.space<host>>, memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>, %u: tensor<4xf32>):
    %s = accy.add %t, %u : tensor<4xf32>
    accy.yield %s : tensor<4xf32>
  }
  func.return
}

// -----

// An out-parameter holds nothing until it is written.
func.func @reads_output_first(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  // expected-error @+1 {{'accy.kernel' op 0 reads %out0 (ins #0) before any kernel or copy writes it}}
  accy.kernel 0 "elementwise" ins(%out0 : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  func.return
}

// -----

// A copy's source is a read too.
func.func @copies_unwritten(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %a = accy.alloc : memref<4xf32, #accy.space<device_global>>
  // expected-error @+1 {{'accy.copy' op reads %a (its source) before any kernel or copy writes it}}
  accy.copy %a to %out0 : memref<4xf32, #accy.space<device_global>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A workspace is scratch: it holds nothing after its kernel.
func.func @reads_workspace(%x: memref<64xf32, #accy.space<host>>, %out0: memref<f32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %arena = accy.arena alignment 64 : memref<512xi8, #accy.space<host>>
  %partials = accy.view %arena[0] : memref<512xi8, #accy.space<host>> to memref<512xi8, #accy.space<host>>
  accy.kernel 0 "reduce" ins(%x : memref<64xf32, #accy.space<host>>) outs(%out0 : memref<f32, #accy.space<host>>) workspaces(%partials : memref<512xi8, #accy.space<host>>) {
  ^bb0(%t: tensor<64xf32>):
    %s = accy.reduce add %t, dims = [0] : (tensor<64xf32>) -> tensor<f32>
    accy.yield %s : tensor<f32>
  } {family = "reduce.chunks", workspace_names = ["partials"]}
  // expected-error @+1 {{'accy.kernel' op 1 reads %partials (ins #0) after 'accy.kernel' op 0 used it as a workspace (scratch, which holds nothing afterwards)}}
  accy.kernel 1 "elementwise" ins(%partials : memref<512xi8, #accy.space<host>>) outs(%out0 : memref<f32, #accy.space<host>>) {
  ^bb0(%t: tensor<512xi8>):
    %c = accy.constant dense<1.0> : tensor<f32>
    accy.yield %c : tensor<f32>
  }
  func.return
}

// -----

// A write clobbers every buffer that shares its bytes: here the whole arena, taken as a
// workspace, over the view %a that kernel 0 wrote.
func.func @clobbered(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %arena = accy.arena alignment 64 : memref<64xi8, #accy.space<host>>
  %a = accy.view %arena[0] : memref<64xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.kernel 0 "elementwise" ins(%x : memref<4xf32, #accy.space<host>>) outs(%a : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  accy.kernel 1 "reduce" ins(%x : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) workspaces(%arena : memref<64xi8, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  } {workspace_names = ["partials"]}
  // expected-error @+1 {{'accy.kernel' op 2 reads %a (ins #0) after 'accy.kernel' op 1 wrote %arena over its bytes (a write clobbers every buffer that shares its bytes)}}
  accy.kernel 2 "elementwise" ins(%a : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
  ^bb0(%t: tensor<4xf32>):
    %e = accy.exponential %t : tensor<4xf32>
    accy.yield %e : tensor<4xf32>
  }
  func.return
}

// -----

// In a loop, a value the body writes only after reading it is written at the loop's start
// only when it is also written before the loop: here the carried buffer %c is not.
func.func @loop_reads_uninitialized(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %arena = accy.arena alignment 64 : memref<128xi8, #accy.space<host>>
  %c = accy.view %arena[0] : memref<128xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  %n = accy.view %arena[64] : memref<128xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.loop 3 {
    // expected-error @+1 {{'accy.kernel' op 0 reads %c (ins #0) not written before it on every path: a value written later in a loop's body counts at the loop's start only if it is also written before the loop}}
    accy.kernel 0 "elementwise" ins(%c : memref<4xf32, #accy.space<host>>) outs(%n : memref<4xf32, #accy.space<host>>) {
    ^bb0(%t: tensor<4xf32>):
      %e = accy.exponential %t : tensor<4xf32>
      accy.yield %e : tensor<4xf32>
    }
    accy.copy %n to %c : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  }
  accy.copy %c to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// The same loop with its carried buffer initialized first is a plan.
func.func @loop_initialized(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %arena = accy.arena alignment 64 : memref<128xi8, #accy.space<host>>
  %c = accy.view %arena[0] : memref<128xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  %n = accy.view %arena[64] : memref<128xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.copy %x to %c : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.loop 3 {
    accy.kernel 0 "elementwise" ins(%c : memref<4xf32, #accy.space<host>>) outs(%n : memref<4xf32, #accy.space<host>>) {
    ^bb0(%t: tensor<4xf32>):
      %e = accy.exponential %t : tensor<4xf32>
      accy.yield %e : tensor<4xf32>
    }
    accy.copy %n to %c : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  }
  accy.copy %c to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  func.return
}

// -----

// A while loop's cond runs first: what it reads must be written before the loop, not
// only by the body.
func.func @while_cond_reads_body_value(%x: memref<4xf32, #accy.space<host>>, %tol: memref<f32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %more = accy.alloc : memref<i1, #accy.space<host>>
  %next = accy.alloc : memref<4xf32, #accy.space<host>>
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  accy.while_loop %more : memref<i1, #accy.space<host>> cond {
    // expected-error @+1 {{'accy.kernel' op 1 reads %next (ins #0) not written before it on every path}}
    accy.kernel 1 "reduce" ins(%next, %tol : memref<4xf32, #accy.space<host>>, memref<f32, #accy.space<host>>) outs(%more : memref<i1, #accy.space<host>>) {
    ^bb0(%c: tensor<4xf32>, %t: tensor<f32>):
      %m = accy.reduce max %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
      %g = accy.compare GT, %m, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
      accy.yield %g : tensor<i1>
    }
  } do {
    accy.kernel 2 "elementwise" ins(%out0 : memref<4xf32, #accy.space<host>>) outs(%next : memref<4xf32, #accy.space<host>>) {
    ^bb0(%b: tensor<4xf32>):
      %h = accy.constant dense<5.000000e-01> : tensor<4xf32>
      %n = accy.multiply %b, %h : tensor<4xf32>
      accy.yield %n : tensor<4xf32>
    }
    accy.copy %next to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  }
  func.return
}

// -----

// A while loop reads its flag after its cond: the cond has to write it.
func.func @while_flag_unwritten(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
  %more = accy.alloc : memref<i1, #accy.space<host>>
  %less = accy.alloc : memref<i1, #accy.space<host>>
  accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
  // expected-error @+1 {{'accy.while_loop' op reads %more (its flag) before any kernel or copy writes it}}
  accy.while_loop %more : memref<i1, #accy.space<host>> cond {
    accy.kernel 1 "reduce" ins(%out0 : memref<4xf32, #accy.space<host>>) outs(%less : memref<i1, #accy.space<host>>) {
    ^bb0(%c: tensor<4xf32>):
      %m = accy.reduce max %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
      %z = accy.constant dense<0.0> : tensor<f32>
      %g = accy.compare LT, %m, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
      accy.yield %g : tensor<i1>
    }
  } do {
    accy.kernel 2 "elementwise" ins(%out0 : memref<4xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
    ^bb0(%b: tensor<4xf32>):
      %h = accy.constant dense<5.000000e-01> : tensor<4xf32>
      %n = accy.multiply %b, %h : tensor<4xf32>
      accy.yield %n : tensor<4xf32>
    }
  }
  func.return
}
