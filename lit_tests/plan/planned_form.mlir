// RUN: accy-opt %s --accy-target=cuda --split-input-file -p accy-plan | filecheck %s
// RUN: accy-opt %s --split-input-file -p 'accy-plan{target=cpu}' | filecheck %s --check-prefix=CPU
// RUN: accy-opt %s --accy-target=cuda --split-input-file -p accy-plan | accy-opt --split-input-file | filecheck %s

// The planned form: the arena and each slot's view at its planned offset, the planned
// transfers, one kernel per work item over buffers (its family and workspace on CUDA), a
// splat constant cloned into the kernel that reads it, and the copy of the result out.

func.func @f(%x: tensor<4x1000xf32>) -> tensor<4xf32> {
  %one = accy.constant dense<1.0> : tensor<4x1000xf32>
  %y = accy.add %x, %one : tensor<4x1000xf32>
  %s = accy.reduce add %y, dims = [1] : (tensor<4x1000xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// CHECK:      builtin.module attributes {accy.target = "cuda", accy.sm_count = 132 : i64} {
// CHECK-NEXT:   func.func @f(%x: memref<4x1000xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
// CHECK-NEXT:     %arena = accy.arena alignment 256 : memref<[[SIZE:[0-9]+]]xi8, #accy.space<device_global>>
// CHECK-NEXT:     %[[IN:slot[0-9]+]] = accy.view %arena[{{[0-9]+}}] : memref<[[SIZE]]xi8, #accy.space<device_global>> to memref<4x1000xf32, #accy.space<device_global>>
// CHECK-NEXT:     %[[OUT:slot[0-9]+]] = accy.view %arena[{{[0-9]+}}] : memref<[[SIZE]]xi8, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
// CHECK-NEXT:     accy.copy %x to %[[IN]] : memref<4x1000xf32, #accy.space<host>> to memref<4x1000xf32, #accy.space<device_global>>
// CHECK-NEXT:     accy.kernel 0 "reduce" ins(%[[IN]] : memref<4x1000xf32, #accy.space<device_global>>) outs(%[[OUT]] : memref<4xf32, #accy.space<device_global>>) {
// CHECK-NEXT:     ^bb0(%x_1: tensor<4x1000xf32>):
// CHECK-NEXT:       %one = accy.constant dense<1.000000e+00> : tensor<4x1000xf32>
// CHECK-NEXT:       %y = accy.add %x_1, %one : tensor<4x1000xf32>
// CHECK-NEXT:       %s = accy.reduce add %y, dims = [1] : (tensor<4x1000xf32>) -> tensor<4xf32>
// CHECK-NEXT:       accy.yield %s : tensor<4xf32>
// CHECK-NEXT:     } {family = "reduce.row"}
// CHECK-NEXT:     accy.copy %[[OUT]] to %out0 : memref<4xf32, #accy.space<device_global>> to memref<4xf32, #accy.space<host>>
// CHECK-NEXT:     func.return

// The CPU plan reads the argument in place, writes the out-parameter directly, and has
// no arena (no temporaries, no workspaces).
// CPU:      func.func @f(%x: memref<4x1000xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
// CPU-NEXT:   accy.kernel 0 "reduce" ins(%x : memref<4x1000xf32, #accy.space<host>>) outs(%out0 : memref<4xf32, #accy.space<host>>) {
// CPU-NOT:    accy.arena
// CPU:        func.return

// -----

// A wide reduction with few rows runs reduce.split on CUDA: its partials are a view of
// the arena passed to the kernel. The CPU plan has its own family, reduce.chunks (2
// chunks of 65536 positions x 64 rows x 4 bytes), and never the CUDA workspace.

func.func @g(%x: tensor<64x100000xf32>) -> tensor<64xf32> {
  %s = accy.reduce add %x, dims = [1] : (tensor<64x100000xf32>) -> tensor<64xf32>
  func.return %s : tensor<64xf32>
}

// CHECK:       %partials = accy.view %arena[{{[0-9]+}}] : memref<{{[0-9]+}}xi8, #accy.space<device_global>> to memref<270336xi8, #accy.space<device_global>>
// CHECK:       accy.kernel 0 "reduce" ins({{.*}}) outs({{.*}}) workspaces(%partials : memref<270336xi8, #accy.space<device_global>>) {
// CHECK:       } {family = "reduce.split", workspace_names = ["partials"]}
// CPU-LABEL:   func.func @g
// CPU:         %arena = accy.arena alignment 64 : memref<512xi8, #accy.space<host>>
// CPU:         %partials = accy.view %arena[0] : memref<512xi8, #accy.space<host>> to memref<512xi8, #accy.space<host>>
// CPU:         accy.kernel 0 "reduce" ins({{.*}}) outs(%out0 : {{.*}}) workspaces(%partials : memref<512xi8, #accy.space<host>>) {
// CPU:         } {family = "reduce.chunks", workspace_names = ["partials"]}
// CPU:         func.return
