// RUN: accy-opt %s --accy-target=cuda -p 'accy-size-workspaces' --accy-report=workspaces 2>&1 >/dev/null | filecheck %s --check-prefix=TERMS
// RUN: accy-opt %s --accy-target=cuda --accy-report arena -p accy-plan-arena -o /dev/null 2>&1 | filecheck %s --check-prefix=ARENA
// RUN: accy-opt %s -p 'accy-lower{target=cuda}' | filecheck %s --check-prefix=CUDA
// RUN: accy-opt %s -p 'accy-plan{target=cpu}' | filecheck %s --check-prefix=CPU

// On CUDA a sort runs the family sort.merge (accy/families/sorts.toml): its workspace
// `scratch` holds one copy of every operand (here 2 x 396 bytes, each aligned to 16:
// sort_bytes = 800), which the ceil(log2(33)) = 6 merge passes ping-pong with the
// results; pass 0 reads the operands, pass 5 writes the results. The CPU sorts slices of
// at most 256 elements by insertion straight into the results: no workspace.

func.func @rank(%k: tensor<3x33xf32>, %v: tensor<3x33xi32>) -> (tensor<3x33xf32>, tensor<3x33xi32>) {
  %a, %b = accy.sort(%k, %v : tensor<3x33xf32>, tensor<3x33xi32>), dim = 1 -> (tensor<3x33xf32>, tensor<3x33xi32>) {
  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>):
    %lt = accy.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %lt : tensor<i1>
  }
  func.return %a, %b : tensor<3x33xf32>, tensor<3x33xi32>
}

// TERMS:      sort.merge  scratch    800    arena  0      0         -

// ARENA:      sort.merge.scratch  workspace  offset 0     800    [0, 0]

// CUDA:       "gpu.launch_func"({{.*}}, %slot2, %slot3, %slot0, %slot1, %scratch) <{kernel = @accy_kernels::@rank_item0_sort_pass0
// CUDA-COUNT-5: "gpu.launch_func"({{.*}}, %slot2, %slot3, %scratch) <{kernel = @accy_kernels::@rank_item0_sort_pass{{[1-5]}}
// CUDA-NOT:   sort_pass6

// CPU-NOT:    %scratch
// CPU:        accy.kernel 0 "sort" ins(%k, %v : {{.*}}) outs(%out0, %out1 : {{.*}}) {
// CPU-NOT:    workspaces
