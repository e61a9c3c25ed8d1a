// RUN: accy-opt %s -p 'accy-plan{target=cuda}' | filecheck %s
// RUN: accy-opt %s -p 'accy-plan{target=cpu}' | filecheck %s --check-prefix=CPU

// An accy.while is an accy.while_loop: the inits copied into the carried buffers before
// it, the cond's kernels in its cond region (on CUDA followed by the copy of the condition
// back into a host buffer of its own, the loop's flag; on the CPU the flag is the
// condition's own buffer), the body's kernels and the copies of the yielded values into
// the carried buffers in its do region.
// CHECK-LABEL: func.func @converge
// CHECK:         accy.copy %slot0 to %[[CARRIED:slot[0-9]+]] : memref<4xf32, #accy.space<device_global>> to memref<4xf32, #accy.space<device_global>>
// CHECK-NEXT:    %flag = accy.alloc : memref<i1, #accy.space<host>>
// CHECK-NEXT:    accy.while_loop %flag : memref<i1, #accy.space<host>> cond {
// CHECK-NEXT:      accy.kernel 1 "reduce" ins(%[[CARRIED]] : {{.*}}) outs(%[[MAX:slot[0-9]+]] : {{.*}}) {
// CHECK:           accy.kernel 2 "elementwise" ins(%[[MAX]], %slot1 : {{.*}}) outs(%[[MORE:slot[0-9]+]] : memref<i1, #accy.space<device_global>>) {
// CHECK:           accy.copy %[[MORE]] to %flag : memref<i1, #accy.space<device_global>> to memref<i1, #accy.space<host>>
// CHECK-NEXT:    } do {
// CHECK-NEXT:      accy.kernel 3 "elementwise" ins(%[[CARRIED]] : {{.*}}) outs(%[[NEXT:slot[0-9]+]] : {{.*}}) {
// CHECK:           accy.copy %[[NEXT]] to %[[CARRIED]]
// CHECK-NEXT:    }
// CHECK-NEXT:    accy.copy %[[CARRIED]] to %out0
// CPU-LABEL: func.func @converge
// CPU:         accy.copy %x to %out0
// CPU-NEXT:    accy.while_loop %[[MORE:slot[0-9]+]] : memref<i1, #accy.space<host>> cond {
// CPU-NEXT:      accy.kernel 1 "reduce" ins(%out0 : {{.*}})
// CPU:           accy.kernel 2 "elementwise" {{.*}} outs(%[[MORE]] : memref<i1, #accy.space<host>>) {
// CPU:         } do {
// CPU-NEXT:      accy.kernel 3 "elementwise" ins(%out0, {{.*}}) outs(%[[NEXT:slot[0-9]+]] : {{.*}}) {
// CPU:           accy.copy %[[NEXT]] to %out0
func.func @converge(%x: tensor<4xf32>, %tol: tensor<f32>) -> tensor<4xf32> {
  %r = accy.while (%x : tensor<4xf32>) -> (tensor<4xf32>) cond {
  ^bb0(%c: tensor<4xf32>):
    %m = accy.reduce max %c, dims = [0] : (tensor<4xf32>) -> tensor<f32>
    %more = accy.compare GT, %m, %tol : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %more : tensor<i1>
  } do {
  ^bb0(%b: tensor<4xf32>):
    %half = accy.constant dense<5.000000e-01> : tensor<4xf32>
    %next = accy.multiply %b, %half : tensor<4xf32>
    accy.yield %next : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
