// A splat constant read only pointwise (ReLU's zero) is folded into its consumer: no
// slot, no constant-arena bytes. Dead ops (results nobody uses) get no work item and no
// slot; `accy-eliminate-dead-code` erases them from the IR.
//
// RUN: accy-opt %s --accy-target=cuda -p accy-plan-schedule,accy-plan-buffers,accy-plan-arena | filecheck %s
// RUN: accy-opt %s --accy-target=cuda -p accy-eliminate-dead-code | filecheck %s --check-prefix=DCE

// CHECK:      func.func @relu
// CHECK-SAME: accy.arena_size = 196608
// CHECK-NEXT:   %zero = accy.constant dense<0.000000e+00> : tensor<64x256xf32>{{$}}
// CHECK-NEXT:   %h = accy.add %x, %b : tensor<64x256xf32>{{$}}
// CHECK-NEXT:   %r = accy.maximum %h, %zero {accy.work_item = "0 elementwise", accy.slot = "slot 2 output 65536 bytes"
// CHECK-NEXT:   %dead = accy.multiply %x, %x : tensor<64x256xf32>{{$}}
// CHECK-NEXT:   %dead_1 = accy.exponential %dead : tensor<64x256xf32>{{$}}
// CHECK-NEXT:   func.return %r
// CHECK-NOT:  accy.work_item = "1
// CHECK-NOT:  slot 3

// CHECK-LABEL: func.func @loop
// CHECK-NEXT:   %l = accy.iterate 3
// CHECK-NEXT:     %unused = accy.negate %c : tensor<1024xf32>{{$}}
// CHECK-NEXT:     %n = accy.add %c, %c {accy.work_item = "2 elementwise in 1"
// CHECK-NEXT:     accy.yield
// CHECK-NEXT:   } {accy.work_item = "1 iterate"
// CHECK:        %dead_loop = accy.iterate 2 iter_args(%d = %a) : tensor<1024xf32> {{[{]$}}
// CHECK-NEXT:     %e = accy.exponential %d : tensor<1024xf32>{{$}}
// CHECK-NOT:    accy.work_item
// CHECK:        func.return

// DCE:      func.func @relu
// DCE-NEXT:   %zero = accy.constant
// DCE-NEXT:   %h = accy.add
// DCE-NEXT:   %r = accy.maximum
// DCE-NEXT:   func.return %r
// DCE:      func.func @loop
// DCE-NEXT:   %l = accy.iterate
// DCE-NEXT:     %n = accy.add %c, %c
// DCE-NEXT:     accy.yield %n
// DCE-NEXT:   }
// DCE-NEXT:   func.return %l

func.func @relu(%x: tensor<64x256xf32>, %b: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %zero = accy.constant dense<0.0> : tensor<64x256xf32>
  %h = accy.add %x, %b : tensor<64x256xf32>
  %r = accy.maximum %h, %zero : tensor<64x256xf32>
  %dead = accy.multiply %x, %x : tensor<64x256xf32>
  %dead_1 = accy.exponential %dead : tensor<64x256xf32>
  func.return %r : tensor<64x256xf32>
}

func.func @loop(%a: tensor<1024xf32>) -> tensor<1024xf32> {
  %l = accy.iterate 3 iter_args(%c = %a) : tensor<1024xf32> {
    %unused = accy.negate %c : tensor<1024xf32>
    %n = accy.add %c, %c : tensor<1024xf32>
    accy.yield %n : tensor<1024xf32>
  }
  %dead_loop = accy.iterate 2 iter_args(%d = %a) : tensor<1024xf32> {
    %e = accy.exponential %d : tensor<1024xf32>
    accy.yield %e : tensor<1024xf32>
  }
  func.return %l : tensor<1024xf32>
}
