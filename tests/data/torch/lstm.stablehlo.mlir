module {
  func.func @main(%arg0: tensor<64x8xf32>, %arg1: tensor<64x16xf32>, %arg2: tensor<64xf32>, %arg3: tensor<64xf32>, %arg4: tensor<2x5x8xf32>) -> (tensor<2x5x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x16xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<1x2x16xf32>
    %cst_1 = arith.constant dense<1> : tensor<1xi64>
    %0 = stablehlo.transpose %arg4, dims = [1, 0, 2] : (tensor<2x5x8xf32>) -> tensor<5x2x8xf32>
    %1 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<64x8xf32>) -> tensor<8x64xf32>
    %2 = stablehlo.reshape %0 : (tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [1, 2] : (tensor<8x64xf32>) -> tensor<5x8x64xf32>
    %4 = stablehlo.reshape %3 : (tensor<5x8x64xf32>) -> tensor<5x8x64xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1, 2] : (tensor<5x8x64xf32>) -> tensor<5x8x64xf32>
    %6 = stablehlo.dot_general %2, %5, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<5x2x8xf32>, tensor<5x8x64xf32>) -> tensor<5x2x64xf32>
    %7 = stablehlo.reshape %6 : (tensor<5x2x64xf32>) -> tensor<5x2x64xf32>
    %8 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<64xf32>) -> tensor<5x2x64xf32>
    %9 = stablehlo.add %7, %8 : tensor<5x2x64xf32>
    %10 = stablehlo.slice %9 [0:1, 0:2, 0:64] : (tensor<5x2x64xf32>) -> tensor<1x2x64xf32>
    %11 = stablehlo.slice %9 [1:2, 0:2, 0:64] : (tensor<5x2x64xf32>) -> tensor<1x2x64xf32>
    %12 = stablehlo.slice %9 [2:3, 0:2, 0:64] : (tensor<5x2x64xf32>) -> tensor<1x2x64xf32>
    %13 = stablehlo.slice %9 [3:4, 0:2, 0:64] : (tensor<5x2x64xf32>) -> tensor<1x2x64xf32>
    %14 = stablehlo.slice %9 [4:5, 0:2, 0:64] : (tensor<5x2x64xf32>) -> tensor<1x2x64xf32>
    %15 = stablehlo.reshape %10 : (tensor<1x2x64xf32>) -> tensor<2x64xf32>
    %16 = stablehlo.reshape %11 : (tensor<1x2x64xf32>) -> tensor<2x64xf32>
    %17 = stablehlo.reshape %12 : (tensor<1x2x64xf32>) -> tensor<2x64xf32>
    %18 = stablehlo.reshape %13 : (tensor<1x2x64xf32>) -> tensor<2x64xf32>
    %19 = stablehlo.reshape %14 : (tensor<1x2x64xf32>) -> tensor<2x64xf32>
    %20 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<64x16xf32>) -> tensor<16x64xf32>
    %21 = stablehlo.dot_general %cst, %20, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %22 = stablehlo.convert %cst_1 : (tensor<1xi64>) -> tensor<1xf32>
    %23 = stablehlo.reshape %22 : (tensor<1xf32>) -> tensor<f32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [] : (tensor<f32>) -> tensor<2x64xf32>
    %25 = stablehlo.multiply %21, %24 : tensor<2x64xf32>
    %26 = stablehlo.broadcast_in_dim %23, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %27 = stablehlo.multiply %arg3, %26 : tensor<64xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [1] : (tensor<64xf32>) -> tensor<2x64xf32>
    %29 = stablehlo.add %25, %28 : tensor<2x64xf32>
    %30 = stablehlo.reshape %29 : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %31 = stablehlo.broadcast_in_dim %15, dims = [1, 2] : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %32 = stablehlo.add %30, %31 : tensor<1x2x64xf32>
    %33 = stablehlo.slice %32 [0:1, 0:2, 0:16] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %34 = stablehlo.slice %32 [0:1, 0:2, 16:32] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %35 = stablehlo.slice %32 [0:1, 0:2, 32:48] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %36 = stablehlo.slice %32 [0:1, 0:2, 48:64] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %37 = stablehlo.logistic %33 : tensor<1x2x16xf32>
    %38 = stablehlo.logistic %34 : tensor<1x2x16xf32>
    %39 = stablehlo.tanh %35 : tensor<1x2x16xf32>
    %40 = stablehlo.logistic %36 : tensor<1x2x16xf32>
    %41 = stablehlo.multiply %38, %cst_0 : tensor<1x2x16xf32>
    %42 = stablehlo.multiply %37, %39 : tensor<1x2x16xf32>
    %43 = stablehlo.add %41, %42 : tensor<1x2x16xf32>
    %44 = stablehlo.tanh %43 : tensor<1x2x16xf32>
    %45 = stablehlo.multiply %40, %44 : tensor<1x2x16xf32>
    %46 = stablehlo.reshape %45 : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
    %47 = stablehlo.dot_general %46, %20, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %48 = stablehlo.multiply %47, %24 : tensor<2x64xf32>
    %49 = stablehlo.add %48, %28 : tensor<2x64xf32>
    %50 = stablehlo.reshape %49 : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %51 = stablehlo.broadcast_in_dim %16, dims = [1, 2] : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %52 = stablehlo.add %50, %51 : tensor<1x2x64xf32>
    %53 = stablehlo.slice %52 [0:1, 0:2, 0:16] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %54 = stablehlo.slice %52 [0:1, 0:2, 16:32] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %55 = stablehlo.slice %52 [0:1, 0:2, 32:48] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %56 = stablehlo.slice %52 [0:1, 0:2, 48:64] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %57 = stablehlo.logistic %53 : tensor<1x2x16xf32>
    %58 = stablehlo.logistic %54 : tensor<1x2x16xf32>
    %59 = stablehlo.tanh %55 : tensor<1x2x16xf32>
    %60 = stablehlo.logistic %56 : tensor<1x2x16xf32>
    %61 = stablehlo.multiply %58, %43 : tensor<1x2x16xf32>
    %62 = stablehlo.multiply %57, %59 : tensor<1x2x16xf32>
    %63 = stablehlo.add %61, %62 : tensor<1x2x16xf32>
    %64 = stablehlo.tanh %63 : tensor<1x2x16xf32>
    %65 = stablehlo.multiply %60, %64 : tensor<1x2x16xf32>
    %66 = stablehlo.reshape %65 : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
    %67 = stablehlo.dot_general %66, %20, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %68 = stablehlo.multiply %67, %24 : tensor<2x64xf32>
    %69 = stablehlo.add %68, %28 : tensor<2x64xf32>
    %70 = stablehlo.reshape %69 : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %71 = stablehlo.broadcast_in_dim %17, dims = [1, 2] : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %72 = stablehlo.add %70, %71 : tensor<1x2x64xf32>
    %73 = stablehlo.slice %72 [0:1, 0:2, 0:16] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %74 = stablehlo.slice %72 [0:1, 0:2, 16:32] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %75 = stablehlo.slice %72 [0:1, 0:2, 32:48] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %76 = stablehlo.slice %72 [0:1, 0:2, 48:64] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %77 = stablehlo.logistic %73 : tensor<1x2x16xf32>
    %78 = stablehlo.logistic %74 : tensor<1x2x16xf32>
    %79 = stablehlo.tanh %75 : tensor<1x2x16xf32>
    %80 = stablehlo.logistic %76 : tensor<1x2x16xf32>
    %81 = stablehlo.multiply %78, %63 : tensor<1x2x16xf32>
    %82 = stablehlo.multiply %77, %79 : tensor<1x2x16xf32>
    %83 = stablehlo.add %81, %82 : tensor<1x2x16xf32>
    %84 = stablehlo.tanh %83 : tensor<1x2x16xf32>
    %85 = stablehlo.multiply %80, %84 : tensor<1x2x16xf32>
    %86 = stablehlo.reshape %85 : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
    %87 = stablehlo.dot_general %86, %20, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %88 = stablehlo.multiply %87, %24 : tensor<2x64xf32>
    %89 = stablehlo.add %88, %28 : tensor<2x64xf32>
    %90 = stablehlo.reshape %89 : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %91 = stablehlo.broadcast_in_dim %18, dims = [1, 2] : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %92 = stablehlo.add %90, %91 : tensor<1x2x64xf32>
    %93 = stablehlo.slice %92 [0:1, 0:2, 0:16] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %94 = stablehlo.slice %92 [0:1, 0:2, 16:32] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %95 = stablehlo.slice %92 [0:1, 0:2, 32:48] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %96 = stablehlo.slice %92 [0:1, 0:2, 48:64] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %97 = stablehlo.logistic %93 : tensor<1x2x16xf32>
    %98 = stablehlo.logistic %94 : tensor<1x2x16xf32>
    %99 = stablehlo.tanh %95 : tensor<1x2x16xf32>
    %100 = stablehlo.logistic %96 : tensor<1x2x16xf32>
    %101 = stablehlo.multiply %98, %83 : tensor<1x2x16xf32>
    %102 = stablehlo.multiply %97, %99 : tensor<1x2x16xf32>
    %103 = stablehlo.add %101, %102 : tensor<1x2x16xf32>
    %104 = stablehlo.tanh %103 : tensor<1x2x16xf32>
    %105 = stablehlo.multiply %100, %104 : tensor<1x2x16xf32>
    %106 = stablehlo.reshape %105 : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
    %107 = stablehlo.dot_general %106, %20, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x64xf32>) -> tensor<2x64xf32>
    %108 = stablehlo.multiply %107, %24 : tensor<2x64xf32>
    %109 = stablehlo.add %108, %28 : tensor<2x64xf32>
    %110 = stablehlo.reshape %109 : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %111 = stablehlo.broadcast_in_dim %19, dims = [1, 2] : (tensor<2x64xf32>) -> tensor<1x2x64xf32>
    %112 = stablehlo.add %110, %111 : tensor<1x2x64xf32>
    %113 = stablehlo.slice %112 [0:1, 0:2, 0:16] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %114 = stablehlo.slice %112 [0:1, 0:2, 16:32] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %115 = stablehlo.slice %112 [0:1, 0:2, 32:48] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %116 = stablehlo.slice %112 [0:1, 0:2, 48:64] : (tensor<1x2x64xf32>) -> tensor<1x2x16xf32>
    %117 = stablehlo.logistic %113 : tensor<1x2x16xf32>
    %118 = stablehlo.logistic %114 : tensor<1x2x16xf32>
    %119 = stablehlo.tanh %115 : tensor<1x2x16xf32>
    %120 = stablehlo.logistic %116 : tensor<1x2x16xf32>
    %121 = stablehlo.multiply %118, %103 : tensor<1x2x16xf32>
    %122 = stablehlo.multiply %117, %119 : tensor<1x2x16xf32>
    %123 = stablehlo.add %121, %122 : tensor<1x2x16xf32>
    %124 = stablehlo.tanh %123 : tensor<1x2x16xf32>
    %125 = stablehlo.multiply %120, %124 : tensor<1x2x16xf32>
    %126 = stablehlo.concatenate %45, %65, %85, %105, %125, dim = 0 : (tensor<1x2x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<5x2x16xf32>
    %127 = stablehlo.reshape %125 : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
    %128 = stablehlo.reshape %123 : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
    %129 = stablehlo.transpose %126, dims = [1, 0, 2] : (tensor<5x2x16xf32>) -> tensor<2x5x16xf32>
    %130 = stablehlo.reshape %127 : (tensor<2x16xf32>) -> tensor<1x2x16xf32>
    %131 = stablehlo.reshape %128 : (tensor<2x16xf32>) -> tensor<1x2x16xf32>
    return %129, %130, %131 : tensor<2x5x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>
  }
}
