// RUN: accy-opt %s -p accy-plan-memory-spaces --accy-report=memory 2>&1 >/dev/null | filecheck %s
// RUN: accy-opt %s --accy-report=memory 2>&1 >/dev/null | filecheck %s

// The memory report (stderr): a summary line, then one row per slot. The report plans
// what is missing, so it needs no planning pass.

// CHECK:      memory-space plan: 11 slots, 152 static bytes, 1 dynamic, 1 elided; device_global 10, device_constant 1, host inputs 6, host outputs 5
// CHECK-NEXT: slot  function               value  role             space            access      transfer        bytes  source
// CHECK-NEXT: 0     @memory_add4           %a     input            device_global    read_only   host_to_device  16     -
// CHECK-NEXT: 1     @memory_add4           %b     input            device_global    read_only   host_to_device  16     -
// CHECK-NEXT: 2     @memory_add4           %s     output           device_global    write_only  device_to_host  16     kernel 0
// CHECK-NEXT: 3     @memory_const_add      %x     input+output     device_global    read_write  bidirectional   16     alias 3
// CHECK-NEXT: 4     @memory_const_add      %d     input            device_global    read_only   host_to_device  ?      -
// CHECK-NEXT: 5     @memory_const_add      %k     constant         device_constant  read_only   none            16     -
// CHECK-NEXT: 6     @memory_const_add      %r     output           device_global    write_only  device_to_host  16     kernel 1
// CHECK-NEXT: 7     @memory_const_add      %back  output+constant  device_global    write_only  device_to_host  8      alias 7
// CHECK-NEXT: 8     @memory_fused_add_mul  %u     input            device_global    read_only   host_to_device  16     -
// CHECK-NEXT: 9     @memory_fused_add_mul  %v     input            device_global    read_only   host_to_device  16     -
// CHECK-NEXT: 10    @memory_fused_add_mul  %p     output           device_global    write_only  device_to_host  16     kernel 2
// CHECK-NOT:  {{.}}

func.func @memory_add4(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %a, %b : tensor<4xf32>
  func.return %s : tensor<4xf32>
}

func.func @memory_const_add(%x: tensor<4xi32>, %d: tensor<?x3xf32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<2xf32>) {
  %k = accy.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %r = accy.add %x, %k : tensor<4xi32>
  %back = accy.constant dense<[3.0, -4.0]> : tensor<2xf32>
  func.return %x, %r, %back : tensor<4xi32>, tensor<4xi32>, tensor<2xf32>
}

func.func @memory_fused_add_mul(%u: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %u, %v : tensor<4xf32>
  %p = accy.multiply %s, %u : tensor<4xf32>
  func.return %p : tensor<4xf32>
}
