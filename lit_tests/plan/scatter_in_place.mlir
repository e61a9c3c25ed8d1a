// RUN: accy-opt %s --accy-target=cuda --accy-report arena -p accy-plan-arena -o /dev/null 2>&1 | filecheck %s --check-prefix=ARENA
// RUN: accy-opt %s --accy-target=cuda -p accy-plan | filecheck %s --check-prefix=PLAN
// RUN: accy-opt %s -p 'accy-lower{target=cuda}' | filecheck %s --check-prefix=CUDA
// RUN: accy-opt %s -p 'accy-lower{target=cpu}' | filecheck %s --check-prefix=CPU

// An embedding gradient (`table.at[ids].add(u)`): the table is donated and dies at the
// scatter, so the result takes its buffer and no copy runs; each update element is added
// into the row it addresses, atomically on CUDA since two ids may be equal (a single add:
// one native atomic, `memref.atomic_rmw addf`; other bodies run in a compare-and-swap loop,
// `memref.generic_atomic_rmw`).

func.func @grad(%table: tensor<6x3xf32> {accy.donated}, %ids: tensor<4x1xi32>, %u: tensor<4x3xf32>) -> tensor<6x3xf32> {
  %r = accy.scatter %table[%ids] updates(%u), update_window_dims = [1], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<6x3xf32>), tensor<4x1xi32>, (tensor<4x3xf32>) -> (tensor<6x3xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = accy.add %a, %b : tensor<f32>
    accy.yield %s : tensor<f32>
  }
  func.return %r : tensor<6x3xf32>
}

// ARENA:      0       input+donated  offset 0                72     [0, 0]
// ARENA:      3       output         offset 0 reuses slot 0  72     [0, 0]

// PLAN:       %slot0 = accy.view %arena[0] : {{.*}} to memref<6x3xf32, #accy.space<device_global>>
// PLAN:       %slot3 = accy.view %arena[0] : {{.*}} to memref<6x3xf32, #accy.space<device_global>>
// PLAN:       accy.kernel 0 "scatter" ins(%slot0, %slot1, %slot2 : {{.*}}) outs(%slot3 : {{.*}})

// CUDA-NOT:   @grad_item0_scatter_copy
// CUDA:       "gpu.launch_func"({{.*}}) <{kernel = @accy_kernels::@grad_item0_scatter
// CUDA:       "gpu.func"() <{function_type = (memref<6x3xf32>, memref<4x1xi32>, memref<4x3xf32>) -> (), kernel}>
// CUDA:         arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CUDA:         %{{.*}} = "memref.atomic_rmw"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{kind = 0 : i64}> : (f32, memref<6x3xf32>, index, index) -> f32

// CPU:        func.func @accy_fn_grad(%table: memref<6x3xf32> {llvm.noalias}, %ids: memref<4x1xi32> {llvm.noalias}, %u: memref<4x3xf32> {llvm.noalias}, %out0: memref<6x3xf32> {llvm.noalias})
// CPU:          memref.store %{{.*}}, %out0[%{{.*}}, %{{.*}}] : memref<6x3xf32>
// CPU:          scf.if
// CPU:            arith.addf
// CPU-NEXT:       memref.store %{{.*}}, %out0[%{{.*}}, %{{.*}}] : memref<6x3xf32>
