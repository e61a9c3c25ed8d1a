// RUN: not accy-opt %s -p 'accy-lower{target=cpu},accy-plan-memory-spaces' 2>&1 | filecheck %s

// Planning a module that accy-lower already turned into upstream functions on memrefs is
// refused (it used to fail with a KeyError inside the planner).

// CHECK: error: 'func.func' op argument #0 has type memref<4xf32>: a lowered function (accy-lower made it); accy plans programs on tensors, before lowering
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
