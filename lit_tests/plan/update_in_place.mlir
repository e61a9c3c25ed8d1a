// RUN: accy-opt %s --accy-target=cuda --accy-report arena -p accy-plan-arena -o /dev/null 2>&1 | filecheck %s --check-prefix=ARENA
// RUN: accy-opt %s --accy-target=cuda -p accy-plan | filecheck %s --check-prefix=PLAN
// RUN: accy-opt %s -p 'accy-lower{target=cuda}' | filecheck %s --check-prefix=CUDA

// A KV-cache update: the cache is donated and dies at the update, so the result takes its
// device buffer in place (one arena offset for both), and the kernel writes only the
// update's block: one thread per element of the 1x16 row, not of the 8x16 cache.

func.func @decode(%cache: tensor<8x16xf32> {accy.donated}, %row: tensor<1x16xf32>, %t: tensor<i32>) -> tensor<8x16xf32> {
  %zero = accy.constant dense<0> : tensor<i32>
  %c = accy.dynamic_update_slice %cache, %row[%t, %zero] : (tensor<8x16xf32>, tensor<1x16xf32>, tensor<i32>, tensor<i32>) -> tensor<8x16xf32>
  func.return %c : tensor<8x16xf32>
}

// ARENA:      0       input+donated  offset 0                512    [0, 0]
// ARENA:      4       output         offset 0 reuses slot 0  512    [0, 0]

// PLAN:       %slot0 = accy.view %arena[0] : {{.*}} to memref<8x16xf32, #accy.space<device_global>>
// PLAN:       %slot4 = accy.view %arena[0] : {{.*}} to memref<8x16xf32, #accy.space<device_global>>
// PLAN:       accy.kernel 0 "elementwise" ins(%slot0, %slot1, %slot2 : {{.*}}) outs(%slot4 : {{.*}})

// CUDA:       "gpu.launch_func"({{.*}}) <{kernel = @accy_kernels::@decode_item0_update
// CUDA:       "gpu.func"() <{function_type = (memref<8x16xf32>, memref<8x16xf32>, memref<1x16xf32>, memref<i32>) -> (), kernel}>
// CUDA:         arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CUDA:         memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x16xf32>
