// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<2x3xi32>, %d: tensor<?xbf16>) -> tensor<4xi1> {
// CHECK-NEXT:    %eq = accy.compare EQ, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %ne = accy.compare NE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %lt = accy.compare LT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %le = accy.compare LE, %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %gt = accy.compare GT, %d, %d : (tensor<?xbf16>, tensor<?xbf16>) -> tensor<?xi1>
// CHECK-NEXT:    %ge = accy.compare GE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    func.return %lt : tensor<4xi1>
// GENERIC-LABEL: "func.func"() <{sym_name = "compare"
// GENERIC:         %eq = "accy.compare"(%a, %b) <{direction = #accy<comparison_direction EQ>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// GENERIC:         %le = "accy.compare"(%i, %i) <{direction = #accy<comparison_direction LE>}> : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
// GENERIC:         %ge = "accy.compare"(%a, %b) <{direction = #accy<comparison_direction GE>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<2x3xi32>, %d: tensor<?xbf16>) -> tensor<4xi1> {
  %eq = accy.compare EQ, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %ne = accy.compare NE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %lt = accy.compare LT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %le = accy.compare LE, %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %gt = accy.compare GT, %d, %d : (tensor<?xbf16>, tensor<?xbf16>) -> tensor<?xi1>
  %ge = accy.compare GE, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %lt : tensor<4xi1>
}

// CHECK-LABEL: func.func @select(%p: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>, %q: tensor<?x2xi1>, %i: tensor<?x2xi64>) -> tensor<4xf32> {
// CHECK-NEXT:    %0 = accy.select %p, %a, %b : tensor<4xi1>, tensor<4xf32>
// CHECK-NEXT:    %1 = accy.select %q, %i, %i : tensor<?x2xi1>, tensor<?x2xi64>
// CHECK-NEXT:    %2 = accy.select %p, %p, %p : tensor<4xi1>, tensor<4xi1>
// CHECK-NEXT:    func.return %0 : tensor<4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "select"
// GENERIC:         %0 = "accy.select"(%p, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %1 = "accy.select"(%q, %i, %i) : (tensor<?x2xi1>, tensor<?x2xi64>, tensor<?x2xi64>) -> tensor<?x2xi64>
func.func @select(%p: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>, %q: tensor<?x2xi1>, %i: tensor<?x2xi64>) -> tensor<4xf32> {
  %0 = accy.select %p, %a, %b : tensor<4xi1>, tensor<4xf32>
  %1 = accy.select %q, %i, %i : tensor<?x2xi1>, tensor<?x2xi64>
  %2 = accy.select %p, %p, %p : tensor<4xi1>, tensor<4xi1>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @convert(%a: tensor<4xf32>, %i: tensor<2x3xi32>, %p: tensor<4xi1>, %d: tensor<?xf16>) -> tensor<4xi32> {
// CHECK-NEXT:    %0 = accy.convert %a : (tensor<4xf32>) -> tensor<4xi32>
// CHECK-NEXT:    %1 = accy.convert %i : (tensor<2x3xi32>) -> tensor<2x3xbf16>
// CHECK-NEXT:    %2 = accy.convert %p : (tensor<4xi1>) -> tensor<4xf32>
// CHECK-NEXT:    %3 = accy.convert %a : (tensor<4xf32>) -> tensor<4xi64>
// CHECK-NEXT:    %4 = accy.convert %d : (tensor<?xf16>) -> tensor<?xf32>
// CHECK-NEXT:    %5 = accy.convert %a : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    func.return %0 : tensor<4xi32>
// GENERIC-LABEL: "func.func"() <{sym_name = "convert"
// GENERIC:         %0 = "accy.convert"(%a) : (tensor<4xf32>) -> tensor<4xi32>
// GENERIC-NEXT:    %1 = "accy.convert"(%i) : (tensor<2x3xi32>) -> tensor<2x3xbf16>
func.func @convert(%a: tensor<4xf32>, %i: tensor<2x3xi32>, %p: tensor<4xi1>, %d: tensor<?xf16>) -> tensor<4xi32> {
  %0 = accy.convert %a : (tensor<4xf32>) -> tensor<4xi32>
  %1 = accy.convert %i : (tensor<2x3xi32>) -> tensor<2x3xbf16>
  %2 = accy.convert %p : (tensor<4xi1>) -> tensor<4xf32>
  %3 = accy.convert %a : (tensor<4xf32>) -> tensor<4xi64>
  %4 = accy.convert %d : (tensor<?xf16>) -> tensor<?xf32>
  %5 = accy.convert %a : (tensor<4xf32>) -> tensor<4xi1>
  func.return %0 : tensor<4xi32>
}
