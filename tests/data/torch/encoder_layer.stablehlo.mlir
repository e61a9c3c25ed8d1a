module {
  func.func @main(%arg0: tensor<96x32xf32>, %arg1: tensor<96xf32>, %arg2: tensor<32x32xf32>, %arg3: tensor<32xf32>, %arg4: tensor<64x32xf32>, %arg5: tensor<64xf32>, %arg6: tensor<32x64xf32>, %arg7: tensor<32xf32>, %arg8: tensor<32xf32>, %arg9: tensor<32xf32>, %arg10: tensor<32xf32>, %arg11: tensor<32xf32>, %arg12: tensor<2x6x32xf32>) -> tensor<2x6x32xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x6x6xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<2x6x64xf32>
    %cst_4 = arith.constant dense<0.59460355750136051> : tensor<1xf64>
    %cst_5 = arith.constant dense<0xFFF0000000000000> : tensor<1xf64>
    %cst_6 = arith.constant dense<1> : tensor<1xi64>
    %cst_7 = arith.constant dense<32> : tensor<1xi64>
    %cst_8 = arith.constant dense<1.000000e-05> : tensor<1xf64>
    %0 = stablehlo.transpose %arg12, dims = [1, 0, 2] : (tensor<2x6x32xf32>) -> tensor<6x2x32xf32>
    %1 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<96x32xf32>) -> tensor<32x96xf32>
    %2 = stablehlo.reshape %0 : (tensor<6x2x32xf32>) -> tensor<6x2x32xf32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [1, 2] : (tensor<32x96xf32>) -> tensor<6x32x96xf32>
    %4 = stablehlo.reshape %3 : (tensor<6x32x96xf32>) -> tensor<6x32x96xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1, 2] : (tensor<6x32x96xf32>) -> tensor<6x32x96xf32>
    %6 = stablehlo.dot_general %2, %5, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<6x2x32xf32>, tensor<6x32x96xf32>) -> tensor<6x2x96xf32>
    %7 = stablehlo.reshape %6 : (tensor<6x2x96xf32>) -> tensor<6x2x96xf32>
    %8 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<96xf32>) -> tensor<6x2x96xf32>
    %9 = stablehlo.add %7, %8 : tensor<6x2x96xf32>
    %10 = stablehlo.reshape %9 : (tensor<6x2x96xf32>) -> tensor<6x2x3x32xf32>
    %11 = stablehlo.reshape %10 : (tensor<6x2x3x32xf32>) -> tensor<1x6x2x3x32xf32>
    %12 = stablehlo.transpose %11, dims = [3, 1, 2, 0, 4] : (tensor<1x6x2x3x32xf32>) -> tensor<3x6x2x1x32xf32>
    %13 = stablehlo.reshape %12 : (tensor<3x6x2x1x32xf32>) -> tensor<3x6x2x32xf32>
    %14 = stablehlo.slice %13 [0:1, 0:6, 0:2, 0:32] : (tensor<3x6x2x32xf32>) -> tensor<1x6x2x32xf32>
    %15 = stablehlo.reshape %14 : (tensor<1x6x2x32xf32>) -> tensor<6x2x32xf32>
    %16 = stablehlo.slice %13 [1:2, 0:6, 0:2, 0:32] : (tensor<3x6x2x32xf32>) -> tensor<1x6x2x32xf32>
    %17 = stablehlo.reshape %16 : (tensor<1x6x2x32xf32>) -> tensor<6x2x32xf32>
    %18 = stablehlo.slice %13 [2:3, 0:6, 0:2, 0:32] : (tensor<3x6x2x32xf32>) -> tensor<1x6x2x32xf32>
    %19 = stablehlo.reshape %18 : (tensor<1x6x2x32xf32>) -> tensor<6x2x32xf32>
    %20 = stablehlo.reshape %15 : (tensor<6x2x32xf32>) -> tensor<6x8x8xf32>
    %21 = stablehlo.transpose %20, dims = [1, 0, 2] : (tensor<6x8x8xf32>) -> tensor<8x6x8xf32>
    %22 = stablehlo.reshape %17 : (tensor<6x2x32xf32>) -> tensor<6x8x8xf32>
    %23 = stablehlo.transpose %22, dims = [1, 0, 2] : (tensor<6x8x8xf32>) -> tensor<8x6x8xf32>
    %24 = stablehlo.reshape %19 : (tensor<6x2x32xf32>) -> tensor<6x8x8xf32>
    %25 = stablehlo.transpose %24, dims = [1, 0, 2] : (tensor<6x8x8xf32>) -> tensor<8x6x8xf32>
    %26 = stablehlo.reshape %21 : (tensor<8x6x8xf32>) -> tensor<2x4x6x8xf32>
    %27 = stablehlo.reshape %23 : (tensor<8x6x8xf32>) -> tensor<2x4x6x8xf32>
    %28 = stablehlo.reshape %25 : (tensor<8x6x8xf32>) -> tensor<2x4x6x8xf32>
    %29 = stablehlo.convert %cst_4 : (tensor<1xf64>) -> tensor<1xf32>
    %30 = stablehlo.reshape %29 : (tensor<1xf32>) -> tensor<f32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [] : (tensor<f32>) -> tensor<2x4x6x8xf32>
    %32 = stablehlo.multiply %26, %31 : tensor<2x4x6x8xf32>
    %33 = stablehlo.transpose %27, dims = [0, 1, 3, 2] : (tensor<2x4x6x8xf32>) -> tensor<2x4x8x6xf32>
    %34 = stablehlo.broadcast_in_dim %30, dims = [] : (tensor<f32>) -> tensor<2x4x8x6xf32>
    %35 = stablehlo.multiply %33, %34 : tensor<2x4x8x6xf32>
    %36 = stablehlo.reshape %32 : (tensor<2x4x6x8xf32>) -> tensor<8x6x8xf32>
    %37 = stablehlo.reshape %35 : (tensor<2x4x8x6xf32>) -> tensor<8x8x6xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0, 1, 2] : (tensor<8x8x6xf32>) -> tensor<8x8x6xf32>
    %39 = stablehlo.dot_general %36, %38, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x6x8xf32>, tensor<8x8x6xf32>) -> tensor<8x6x6xf32>
    %40 = stablehlo.reshape %39 : (tensor<8x6x6xf32>) -> tensor<2x4x6x6xf32>
    %41 = stablehlo.reduce(%40 init: %cst_0) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
    %42 = stablehlo.reshape %41 : (tensor<2x4x6xf32>) -> tensor<2x4x6x1xf32>
    %43 = stablehlo.broadcast_in_dim %42, dims = [0, 1, 2, 3] : (tensor<2x4x6x1xf32>) -> tensor<2x4x6x6xf32>
    %44 = stablehlo.subtract %40, %43 : tensor<2x4x6x6xf32>
    %45 = stablehlo.exponential %44 : tensor<2x4x6x6xf32>
    %46 = stablehlo.reduce(%45 init: %cst_1) applies stablehlo.add across dimensions = [3] : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
    %47 = stablehlo.reshape %46 : (tensor<2x4x6xf32>) -> tensor<2x4x6x1xf32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [0, 1, 2, 3] : (tensor<2x4x6x1xf32>) -> tensor<2x4x6x6xf32>
    %49 = stablehlo.divide %45, %48 : tensor<2x4x6x6xf32>
    %50 = stablehlo.convert %cst_5 : tensor<1xf64>
    %51 = stablehlo.reshape %50 : (tensor<1xf64>) -> tensor<f64>
    %52 = stablehlo.convert %51 : (tensor<f64>) -> tensor<f32>
    %53 = stablehlo.broadcast_in_dim %52, dims = [] : (tensor<f32>) -> tensor<2x4x6x6xf32>
    %54 = stablehlo.compare EQ, %40, %53, FLOAT : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xi1>
    %55 = stablehlo.reduce(%54 init: %c) applies stablehlo.and across dimensions = [3] : (tensor<2x4x6x6xi1>, tensor<i1>) -> tensor<2x4x6xi1>
    %56 = stablehlo.reshape %55 : (tensor<2x4x6xi1>) -> tensor<2x4x6x1xi1>
    %57 = stablehlo.broadcast_in_dim %56, dims = [0, 1, 2, 3] : (tensor<2x4x6x1xi1>) -> tensor<2x4x6x6xi1>
    %58 = stablehlo.broadcast_in_dim %cst, dims = [0, 1, 2, 3] : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
    %59 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2, 3] : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
    %60 = stablehlo.select %57, %58, %59 : tensor<2x4x6x6xi1>, tensor<2x4x6x6xf32>
    %61 = stablehlo.reshape %60 : (tensor<2x4x6x6xf32>) -> tensor<8x6x6xf32>
    %62 = stablehlo.reshape %28 : (tensor<2x4x6x8xf32>) -> tensor<8x6x8xf32>
    %63 = stablehlo.broadcast_in_dim %62, dims = [0, 1, 2] : (tensor<8x6x8xf32>) -> tensor<8x6x8xf32>
    %64 = stablehlo.dot_general %61, %63, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x6x6xf32>, tensor<8x6x8xf32>) -> tensor<8x6x8xf32>
    %65 = stablehlo.reshape %64 : (tensor<8x6x8xf32>) -> tensor<2x4x6x8xf32>
    %66 = stablehlo.transpose %65, dims = [2, 0, 1, 3] : (tensor<2x4x6x8xf32>) -> tensor<6x2x4x8xf32>
    %67 = stablehlo.transpose %66, dims = [1, 2, 0, 3] : (tensor<6x2x4x8xf32>) -> tensor<2x4x6x8xf32>
    %68 = stablehlo.transpose %67, dims = [2, 0, 1, 3] : (tensor<2x4x6x8xf32>) -> tensor<6x2x4x8xf32>
    %69 = stablehlo.reshape %68 : (tensor<6x2x4x8xf32>) -> tensor<12x32xf32>
    %70 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<32x32xf32>) -> tensor<32x32xf32>
    %71 = stablehlo.dot_general %69, %70, contracting_dims = [1] x [0] : (tensor<12x32xf32>, tensor<32x32xf32>) -> tensor<12x32xf32>
    %72 = stablehlo.convert %cst_6 : (tensor<1xi64>) -> tensor<1xf32>
    %73 = stablehlo.reshape %72 : (tensor<1xf32>) -> tensor<f32>
    %74 = stablehlo.broadcast_in_dim %73, dims = [] : (tensor<f32>) -> tensor<12x32xf32>
    %75 = stablehlo.multiply %71, %74 : tensor<12x32xf32>
    %76 = stablehlo.broadcast_in_dim %73, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %77 = stablehlo.multiply %arg3, %76 : tensor<32xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [1] : (tensor<32xf32>) -> tensor<12x32xf32>
    %79 = stablehlo.add %75, %78 : tensor<12x32xf32>
    %80 = stablehlo.reshape %79 : (tensor<12x32xf32>) -> tensor<6x2x32xf32>
    %81 = stablehlo.transpose %80, dims = [1, 0, 2] : (tensor<6x2x32xf32>) -> tensor<2x6x32xf32>
    %82 = stablehlo.add %arg12, %81 : tensor<2x6x32xf32>
    %83 = stablehlo.convert %82 : (tensor<2x6x32xf32>) -> tensor<2x6x32xf64>
    %84 = stablehlo.reduce(%83 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x6x32xf64>, tensor<f64>) -> tensor<2x6xf64>
    %85 = stablehlo.reshape %84 : (tensor<2x6xf64>) -> tensor<2x6x1xf64>
    %86 = stablehlo.convert %cst_7 : (tensor<1xi64>) -> tensor<1xf64>
    %87 = stablehlo.reshape %86 : (tensor<1xf64>) -> tensor<f64>
    %88 = stablehlo.broadcast_in_dim %87, dims = [] : (tensor<f64>) -> tensor<2x6x1xf64>
    %89 = stablehlo.divide %85, %88 : tensor<2x6x1xf64>
    %90 = stablehlo.broadcast_in_dim %89, dims = [0, 1, 2] : (tensor<2x6x1xf64>) -> tensor<2x6x32xf64>
    %91 = stablehlo.subtract %83, %90 : tensor<2x6x32xf64>
    %92 = stablehlo.multiply %91, %91 : tensor<2x6x32xf64>
    %93 = stablehlo.reduce(%92 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x6x32xf64>, tensor<f64>) -> tensor<2x6xf64>
    %94 = stablehlo.reshape %93 : (tensor<2x6xf64>) -> tensor<2x6x1xf64>
    %95 = stablehlo.divide %94, %88 : tensor<2x6x1xf64>
    %96 = stablehlo.convert %95 : (tensor<2x6x1xf64>) -> tensor<2x6x1xf32>
    %97 = stablehlo.reduce(%82 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x6x32xf32>, tensor<f32>) -> tensor<2x6xf32>
    %98 = stablehlo.reshape %97 : (tensor<2x6xf32>) -> tensor<2x6x1xf32>
    %99 = stablehlo.convert %cst_7 : (tensor<1xi64>) -> tensor<1xf32>
    %100 = stablehlo.reshape %99 : (tensor<1xf32>) -> tensor<f32>
    %101 = stablehlo.broadcast_in_dim %100, dims = [] : (tensor<f32>) -> tensor<2x6x1xf32>
    %102 = stablehlo.divide %98, %101 : tensor<2x6x1xf32>
    %103 = stablehlo.convert %cst_8 : (tensor<1xf64>) -> tensor<1xf32>
    %104 = stablehlo.reshape %103 : (tensor<1xf32>) -> tensor<f32>
    %105 = stablehlo.broadcast_in_dim %104, dims = [] : (tensor<f32>) -> tensor<2x6x1xf32>
    %106 = stablehlo.add %96, %105 : tensor<2x6x1xf32>
    %107 = stablehlo.rsqrt %106 : tensor<2x6x1xf32>
    %108 = stablehlo.broadcast_in_dim %102, dims = [0, 1, 2] : (tensor<2x6x1xf32>) -> tensor<2x6x32xf32>
    %109 = stablehlo.subtract %82, %108 : tensor<2x6x32xf32>
    %110 = stablehlo.broadcast_in_dim %107, dims = [0, 1, 2] : (tensor<2x6x1xf32>) -> tensor<2x6x32xf32>
    %111 = stablehlo.multiply %109, %110 : tensor<2x6x32xf32>
    %112 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<32xf32>) -> tensor<2x6x32xf32>
    %113 = stablehlo.multiply %111, %112 : tensor<2x6x32xf32>
    %114 = stablehlo.broadcast_in_dim %arg9, dims = [2] : (tensor<32xf32>) -> tensor<2x6x32xf32>
    %115 = stablehlo.add %113, %114 : tensor<2x6x32xf32>
    %116 = stablehlo.reshape %115 : (tensor<2x6x32xf32>) -> tensor<12x32xf32>
    %117 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %118 = stablehlo.dot_general %116, %117, contracting_dims = [1] x [0] : (tensor<12x32xf32>, tensor<32x64xf32>) -> tensor<12x64xf32>
    %119 = stablehlo.broadcast_in_dim %73, dims = [] : (tensor<f32>) -> tensor<12x64xf32>
    %120 = stablehlo.multiply %118, %119 : tensor<12x64xf32>
    %121 = stablehlo.broadcast_in_dim %73, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %122 = stablehlo.multiply %arg5, %121 : tensor<64xf32>
    %123 = stablehlo.broadcast_in_dim %122, dims = [1] : (tensor<64xf32>) -> tensor<12x64xf32>
    %124 = stablehlo.add %120, %123 : tensor<12x64xf32>
    %125 = stablehlo.reshape %124 : (tensor<12x64xf32>) -> tensor<2x6x64xf32>
    %126 = stablehlo.maximum %125, %cst_3 : tensor<2x6x64xf32>
    %127 = stablehlo.reshape %126 : (tensor<2x6x64xf32>) -> tensor<12x64xf32>
    %128 = stablehlo.transpose %arg6, dims = [1, 0] : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %129 = stablehlo.dot_general %127, %128, contracting_dims = [1] x [0] : (tensor<12x64xf32>, tensor<64x32xf32>) -> tensor<12x32xf32>
    %130 = stablehlo.multiply %129, %74 : tensor<12x32xf32>
    %131 = stablehlo.multiply %arg7, %76 : tensor<32xf32>
    %132 = stablehlo.broadcast_in_dim %131, dims = [1] : (tensor<32xf32>) -> tensor<12x32xf32>
    %133 = stablehlo.add %130, %132 : tensor<12x32xf32>
    %134 = stablehlo.reshape %133 : (tensor<12x32xf32>) -> tensor<2x6x32xf32>
    %135 = stablehlo.add %115, %134 : tensor<2x6x32xf32>
    %136 = stablehlo.convert %135 : (tensor<2x6x32xf32>) -> tensor<2x6x32xf64>
    %137 = stablehlo.reduce(%136 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x6x32xf64>, tensor<f64>) -> tensor<2x6xf64>
    %138 = stablehlo.reshape %137 : (tensor<2x6xf64>) -> tensor<2x6x1xf64>
    %139 = stablehlo.divide %138, %88 : tensor<2x6x1xf64>
    %140 = stablehlo.broadcast_in_dim %139, dims = [0, 1, 2] : (tensor<2x6x1xf64>) -> tensor<2x6x32xf64>
    %141 = stablehlo.subtract %136, %140 : tensor<2x6x32xf64>
    %142 = stablehlo.multiply %141, %141 : tensor<2x6x32xf64>
    %143 = stablehlo.reduce(%142 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x6x32xf64>, tensor<f64>) -> tensor<2x6xf64>
    %144 = stablehlo.reshape %143 : (tensor<2x6xf64>) -> tensor<2x6x1xf64>
    %145 = stablehlo.divide %144, %88 : tensor<2x6x1xf64>
    %146 = stablehlo.convert %145 : (tensor<2x6x1xf64>) -> tensor<2x6x1xf32>
    %147 = stablehlo.reduce(%135 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x6x32xf32>, tensor<f32>) -> tensor<2x6xf32>
    %148 = stablehlo.reshape %147 : (tensor<2x6xf32>) -> tensor<2x6x1xf32>
    %149 = stablehlo.divide %148, %101 : tensor<2x6x1xf32>
    %150 = stablehlo.add %146, %105 : tensor<2x6x1xf32>
    %151 = stablehlo.rsqrt %150 : tensor<2x6x1xf32>
    %152 = stablehlo.broadcast_in_dim %149, dims = [0, 1, 2] : (tensor<2x6x1xf32>) -> tensor<2x6x32xf32>
    %153 = stablehlo.subtract %135, %152 : tensor<2x6x32xf32>
    %154 = stablehlo.broadcast_in_dim %151, dims = [0, 1, 2] : (tensor<2x6x1xf32>) -> tensor<2x6x32xf32>
    %155 = stablehlo.multiply %153, %154 : tensor<2x6x32xf32>
    %156 = stablehlo.broadcast_in_dim %arg10, dims = [2] : (tensor<32xf32>) -> tensor<2x6x32xf32>
    %157 = stablehlo.multiply %155, %156 : tensor<2x6x32xf32>
    %158 = stablehlo.broadcast_in_dim %arg11, dims = [2] : (tensor<32xf32>) -> tensor<2x6x32xf32>
    %159 = stablehlo.add %157, %158 : tensor<2x6x32xf32>
    return %159 : tensor<2x6x32xf32>
  }
}
