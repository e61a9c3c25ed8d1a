"""The programs the CUDA target is checked with: one per kernel pattern and plan feature.

Each `Program` is accy text, the function to call, how to make its inputs from a seed,
and a numpy oracle (`expected`) that needs nothing but numpy, so the GPU machine can
check results without the compiler (the JAX programs and the model zoo's: JAX's own
outputs, stored with their inputs). `tests/cuda` runs the small ones and the zoo against
the fake CUDA driver; `prepare.py` exports all of them for `run_check.py` on a GPU.

This file imports only numpy and the standard library (run_check.py loads it on the GPU
machine; ml_dtypes, which JAX brings, for the zoo's bf16 arrays).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Program:
    name: str
    text: str
    inputs: tuple[tuple[tuple[int, ...], str], ...]
    """(shape, numpy dtype name) of each argument."""
    expected: Callable[..., tuple[np.ndarray, ...]]
    features: tuple[str, ...] = ()
    """Kernel patterns / plan features the program exercises (family ids, kinds, ...)."""
    large: bool = False
    """A benchmark-size program: timed on the GPU, skipped by the fake-driver tests."""
    tolerance: float = 1e-5
    bytes_moved: Callable[[], int] | None = field(default=None)
    """Bytes a perfect kernel reads and writes (for bandwidth), large programs only."""
    data: Path | None = None
    """A program exported from JAX: `text` is then StableHLO, and this `.npz` holds its
    inputs (`argN`) and JAX's output (`expected`)."""
    function: str | None = None
    """The function to call (default: `name`)."""

    def make_inputs(self, seed: int = 0) -> list[np.ndarray]:
        if self.data is not None:
            with np.load(self.data) as archive:
                return _arrays(archive, "arg")
        rng = np.random.default_rng(seed)
        arrays = []
        for shape, dtype in self.inputs:
            if np.dtype(dtype).kind == "f":
                arrays.append(rng.standard_normal(shape, dtype=np.float32).astype(dtype))
            elif dtype == "bool":
                arrays.append(rng.integers(0, 2, shape).astype(bool))
            else:
                arrays.append(rng.integers(-50, 50, shape).astype(dtype))
        return arrays


def _arrays(archive, prefix: str) -> list[np.ndarray]:
    """`prefix0`, `prefix1`, ... of an `.npz` (bf16 arrays stored as their uint16 bits under
    `prefixN.bf16`, as the zoo's export writes them)."""
    arrays = []
    while True:
        key = f"{prefix}{len(arrays)}"
        if key in archive.files:
            arrays.append(archive[key])
        elif f"{key}.bf16" in archive.files:
            import ml_dtypes

            arrays.append(archive[f"{key}.bf16"].view(ml_dtypes.bfloat16))
        else:
            return arrays


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


PROGRAMS: list[Program] = [
    Program(
        "elementwise_chain",
        """
func.func @elementwise_chain(%x: tensor<64x96xf32>, %y: tensor<64x96xf32>) -> tensor<64x96xf32> {
  %s = accy.add %x, %y : tensor<64x96xf32>
  %e = accy.exponential %s : tensor<64x96xf32>
  %t = accy.tanh %x : tensor<64x96xf32>
  %c = accy.compare LT, %s, %y : (tensor<64x96xf32>, tensor<64x96xf32>) -> tensor<64x96xi1>
  %sel = accy.select %c, %e, %t : tensor<64x96xi1>, tensor<64x96xf32>
  %h = accy.convert %sel : (tensor<64x96xf32>) -> tensor<64x96xf16>
  %back = accy.convert %h : (tensor<64x96xf16>) -> tensor<64x96xf32>
  %r = accy.logistic %back : tensor<64x96xf32>
  func.return %r : tensor<64x96xf32>
}
""",
        (((64, 96), "float32"), ((64, 96), "float32")),
        lambda x, y: (
            _sigmoid(
                np.where(x + y < y, np.exp(x + y), np.tanh(x)).astype(np.float16).astype(np.float32)
            ),
        ),
        ("elementwise", "compare", "select", "convert"),
        tolerance=1e-3,
    ),
    Program(
        "broadcast",
        """
func.func @broadcast(%x: tensor<64x128xf32>, %row: tensor<128xf32>, %col: tensor<64xf32>) -> tensor<64x128xf32> {
  %r = accy.broadcast_in_dim %row, dims = [1] : (tensor<128xf32>) -> tensor<64x128xf32>
  %c = accy.broadcast_in_dim %col, dims = [0] : (tensor<64xf32>) -> tensor<64x128xf32>
  %s = accy.add %x, %r : tensor<64x128xf32>
  %m = accy.multiply %s, %c : tensor<64x128xf32>
  func.return %m : tensor<64x128xf32>
}
""",
        (((64, 128), "float32"), ((128,), "float32"), ((64,), "float32")),
        lambda x, row, col: ((x + row[None, :]) * col[:, None],),
        ("broadcast",),
    ),
    Program(
        "broadcast_reshape_roots",
        """
func.func @broadcast_reshape_roots(%v: tensor<1x5xi32>, %m: tensor<6x4xf32>) -> (tensor<3x4x5xi32>, tensor<4x6xf32>) {
  %b = accy.broadcast_in_dim %v, dims = [0, 2] : (tensor<1x5xi32>) -> tensor<3x4x5xi32>
  %r = accy.reshape %m : (tensor<6x4xf32>) -> tensor<4x6xf32>
  func.return %b, %r : tensor<3x4x5xi32>, tensor<4x6xf32>
}
""",
        (((1, 5), "int32"), ((6, 4), "float32")),
        lambda v, m: (np.broadcast_to(v.reshape(1, 1, 5), (3, 4, 5)), m.reshape(4, 6)),
        ("broadcast", "reshape"),
    ),
    Program(
        "transpose",
        """
func.func @transpose(%x: tensor<32x48x5xf32>) -> tensor<5x32x48xf32> {
  %t = accy.transpose %x, dims = [2, 0, 1] : (tensor<32x48x5xf32>) -> tensor<5x32x48xf32>
  func.return %t : tensor<5x32x48xf32>
}
""",
        (((32, 48, 5), "float32"),),
        lambda x: (np.transpose(x, (2, 0, 1)),),
        ("transpose",),
    ),
    Program(
        "reduce_row",
        """
func.func @reduce_row(%x: tensor<64x1000xf32>) -> tensor<64xf32> {
  %sq = accy.multiply %x, %x : tensor<64x1000xf32>
  %r = accy.reduce add %sq, dims = [1] : (tensor<64x1000xf32>) -> tensor<64xf32>
  func.return %r : tensor<64xf32>
}
""",
        (((64, 1000), "float32"),),
        lambda x: ((x.astype(np.float64) ** 2).sum(axis=1).astype(np.float32),),
        ("reduce.row",),
        tolerance=1e-4,
    ),
    Program(
        "reduce_columns",
        """
func.func @reduce_columns(%x: tensor<300x7xi32>) -> tensor<7xi32> {
  %r = accy.reduce max %x, dims = [0] : (tensor<300x7xi32>) -> tensor<7xi32>
  func.return %r : tensor<7xi32>
}
""",
        (((300, 7), "int32"),),
        lambda x: (x.max(axis=0),),
        ("reduce.row",),
    ),
    Program(
        "reduce_split",
        """
func.func @reduce_split(%x: tensor<8x10000xf32>) -> tensor<8xf32> {
  %r = accy.reduce max %x, dims = [1] : (tensor<8x10000xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
""",
        (((8, 10000), "float32"),),
        lambda x: (x.max(axis=1),),
        ("reduce.split",),
    ),
    Program(
        "scan_block",
        """
func.func @scan_block(%x: tensor<16x1000xf32>, %scratch: tensor<16x1000xf32>) -> tensor<16x1000xf32> {
  %r = accy.scan add %x, %scratch, dim = 1 : tensor<16x1000xf32>
  func.return %r : tensor<16x1000xf32>
}
""",
        (((16, 1000), "float32"), ((16, 1000), "float32")),
        lambda x, s: (np.cumsum(x.astype(np.float64), axis=1).astype(np.float32),),
        ("scan.block",),
        tolerance=1e-3,
    ),
    Program(
        "scan_multiblock",
        """
func.func @scan_multiblock(%x: tensor<4x5000xi32>, %scratch: tensor<4x5000xi32>) -> tensor<4x5000xi32> {
  %r = accy.scan add %x, %scratch, dim = 1 : tensor<4x5000xi32>
  func.return %r : tensor<4x5000xi32>
}
""",
        (((4, 5000), "int32"), ((4, 5000), "int32")),
        lambda x, s: (np.cumsum(x, axis=1, dtype=np.int32),),
        ("scan.multiblock",),
    ),
    Program(
        "dot_tiled",
        """
func.func @dot_tiled(%a: tensor<2x50x96xf32>, %b: tensor<2x96x40xf32>) -> tensor<2x50x40xf32> {
  %r = accy.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x50x96xf32>, tensor<2x96x40xf32>) -> tensor<2x50x40xf32>
  func.return %r : tensor<2x50x40xf32>
}
""",
        (((2, 50, 96), "float32"), ((2, 96, 40), "float32")),
        lambda a, b: (np.matmul(a.astype(np.float64), b).astype(np.float32),),
        ("dot.tiled",),
        tolerance=1e-4,
    ),
    Program(
        "dot_splitk",
        """
func.func @dot_splitk(%a: tensor<20x5000xf32>, %b: tensor<5000x24xf32>) -> tensor<20x24xf32> {
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<20x5000xf32>, tensor<5000x24xf32>) -> tensor<20x24xf32>
  func.return %r : tensor<20x24xf32>
}
""",
        (((20, 5000), "float32"), ((5000, 24), "float32")),
        lambda a, b: ((a.astype(np.float64) @ b).astype(np.float32),),
        ("dot.splitk",),
        tolerance=1e-3,
    ),
    Program(
        "iterate",
        """
func.func @iterate(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
  %half = accy.constant dense<5.000000e-01> : tensor<256xf32>
  %r = accy.iterate 3 iter_args(%p = %x) : tensor<256xf32> {
    %m = accy.multiply %p, %half : tensor<256xf32>
    %n = accy.add %m, %y : tensor<256xf32>
    accy.yield %n : tensor<256xf32>
  }
  func.return %r : tensor<256xf32>
}
""",
        (((256,), "float32"), ((256,), "float32")),
        lambda x, y: (((x * 0.5 + y) * 0.5 + y) * 0.5 + y,),
        ("iterate",),
    ),
    Program(
        "constants",
        """
func.func @constants(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %table = accy.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
  %two = accy.constant dense<2.0> : tensor<4x4xf32>
  %s = accy.add %x, %table : tensor<4x4xf32>
  %m = accy.multiply %s, %two : tensor<4x4xf32>
  func.return %m : tensor<4x4xf32>
}
""",
        (((4, 4), "float32"),),
        lambda x: ((x + np.arange(1, 17, dtype=np.float32).reshape(4, 4)) * 2,),
        ("constant_memory", "splat"),
    ),
    Program(
        "aliased_outputs",
        """
func.func @aliased_outputs(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<3xi32>) {
  %k = accy.constant dense<[7, 8, 9]> : tensor<3xi32>
  %s = accy.add %x, %y : tensor<8xf32>
  func.return %x, %s, %k : tensor<8xf32>, tensor<8xf32>, tensor<3xi32>
}
""",
        (((8,), "float32"), ((8,), "float32")),
        lambda x, y: (x, x + y, np.array([7, 8, 9], np.int32)),
        ("bidirectional", "aliased_constant"),
    ),
    Program(
        "slice_concat_iota",
        """
func.func @slice_concat_iota(%x: tensor<6x10xf32>) -> tensor<6x12xf32> {
  %s = accy.slice %x [0:6:1, 1:9:2] : (tensor<6x10xf32>) -> tensor<6x4xf32>
  %i = accy.iota dim = 1 : tensor<6x8xf32>
  %c = accy.concatenate %s, %i, dim = 1 : (tensor<6x4xf32>, tensor<6x8xf32>) -> tensor<6x12xf32>
  func.return %c : tensor<6x12xf32>
}
""",
        (((6, 10), "float32"),),
        lambda x: (
            np.concatenate(
                [x[:, 1:9:2], np.broadcast_to(np.arange(8, dtype=np.float32), (6, 8))], axis=1
            ),
        ),
        ("slice", "iota", "concatenate"),
    ),
    Program(
        "donated",
        """
func.func @donated(%x: tensor<64x96xf32> {accy.donated}, %y: tensor<64x96xf32>) -> (tensor<96xf32>, tensor<64xf32>) {
  %s = accy.add %x, %y : tensor<64x96xf32>
  %c = accy.reduce add %s, dims = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  %r = accy.reduce max %s, dims = [1] : (tensor<64x96xf32>) -> tensor<64xf32>
  func.return %c, %r : tensor<96xf32>, tensor<64xf32>
}
""",
        (((64, 96), "float32"), ((64, 96), "float32")),
        lambda x, y: ((x + y).sum(axis=0, dtype=np.float64).astype(np.float32), (x + y).max(1)),
        ("donated",),
        tolerance=1e-4,
    ),
    Program(
        "reverse_pad",
        """
func.func @reverse_pad(%x: tensor<8x12xf32>, %v: tensor<f32>) -> (tensor<8x12xf32>, tensor<11x22xf32>) {
  %r = accy.reverse %x, dims = [0, 1] : tensor<8x12xf32>
  %a = accy.add %r, %x : tensor<8x12xf32>
  %p = accy.pad %a, %v, low = [2, -1], high = [1, 0], interior = [0, 1] : (tensor<8x12xf32>, tensor<f32>) -> tensor<11x22xf32>
  func.return %r, %p : tensor<8x12xf32>, tensor<11x22xf32>
}
""",
        (((8, 12), "float32"), ((), "float32")),
        lambda x, v: (x[::-1, ::-1], _pad_expected(x[::-1, ::-1] + x, v)),
        ("reverse", "pad"),
    ),
    Program(
        "dynamic_slice",
        """
func.func @dynamic_slice(%x: tensor<16x24xf32>, %i: tensor<i64>, %j: tensor<i64>) -> tensor<4x8xf32> {
  %s = accy.dynamic_slice %x[%i, %j], sizes = [4, 8] : (tensor<16x24xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  %t = accy.tanh %s : tensor<4x8xf32>
  func.return %t : tensor<4x8xf32>
}
""",
        (((16, 24), "float32"), ((), "int64"), ((), "int64")),
        lambda x, i, j: (np.tanh(_block(x, (int(i), int(j)), (4, 8))),),
        ("dynamic_slice",),
    ),
    Program(
        "dynamic_update_slice",
        """
func.func @dynamic_update_slice(%cache: tensor<32x64xf32> {accy.donated}, %row: tensor<1x64xf32>, %t: tensor<i64>) -> tensor<32x64xf32> {
  %zero = accy.constant dense<0> : tensor<i64>
  %c = accy.dynamic_update_slice %cache, %row[%t, %zero] : (tensor<32x64xf32>, tensor<1x64xf32>, tensor<i64>, tensor<i64>) -> tensor<32x64xf32>
  func.return %c : tensor<32x64xf32>
}
""",
        (((32, 64), "float32"), ((1, 64), "float32"), ((), "int64")),
        lambda cache, row, t: (_updated(cache, row, (int(t), 0)),),
        ("dynamic_update_slice",),
    ),
    Program(
        "gather",
        """
func.func @gather(%table: tensor<64x32xf32>, %ids: tensor<16x1xi32>) -> tensor<16x32xf32> {
  %rows = accy.gather %table[%ids], offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 32] : (tensor<64x32xf32>, tensor<16x1xi32>) -> tensor<16x32xf32>
  %scale = accy.constant dense<2.0> : tensor<16x32xf32>
  %r = accy.multiply %rows, %scale : tensor<16x32xf32>
  func.return %r : tensor<16x32xf32>
}
""",
        (((64, 32), "float32"), ((16, 1), "int32")),
        lambda table, ids: (2 * table[np.clip(ids[:, 0], 0, 63)],),
        ("gather",),
    ),
    Program(
        "scatter_add",
        """
func.func @scatter_add(%table: tensor<64x32xf32> {accy.donated}, %ids: tensor<128x1xi32>, %u: tensor<128x32xf32>) -> tensor<64x32xf32> {
  %r = accy.scatter %table[%ids] updates(%u), update_window_dims = [1], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<64x32xf32>), tensor<128x1xi32>, (tensor<128x32xf32>) -> (tensor<64x32xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = accy.add %a, %b : tensor<f32>
    accy.yield %s : tensor<f32>
  }
  func.return %r : tensor<64x32xf32>
}
""",
        (((64, 32), "float32"), ((128, 1), "int32"), ((128, 32), "float32")),
        lambda table, ids, u: (_scatter_rows(np.add, table, ids[:, 0], u),),
        ("scatter", "scatter in place", "duplicate indices"),
        tolerance=1e-4,
    ),
    Program(
        "scatter_max",
        """
func.func @scatter_max(%x: tensor<64xi32>, %ids: tensor<48x1xi32>, %u: tensor<48xi32>) -> tensor<64xi32> {
  %r = accy.scatter %x[%ids] updates(%u), update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<64xi32>), tensor<48x1xi32>, (tensor<48xi32>) -> (tensor<64xi32>) {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %m = accy.maximum %a, %b : tensor<i32>
    accy.yield %m : tensor<i32>
  }
  func.return %r : tensor<64xi32>
}
""",
        (((64,), "int32"), ((48, 1), "int32"), ((48,), "int32")),
        lambda x, ids, u: (_scatter_rows(np.maximum, x, ids[:, 0], u),),
        ("scatter", "duplicate indices"),
    ),
    Program(
        "top_k",
        """
func.func @top_k(%x: tensor<8x1000xf32>) -> (tensor<8x5xf32>, tensor<8x5xi32>) {
  %iota = accy.iota dim = 1 : tensor<8x1000xi32>
  %v, %i = accy.sort(%x, %iota : tensor<8x1000xf32>, tensor<8x1000xi32>), dim = 1 stable -> (tensor<8x1000xf32>, tensor<8x1000xi32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %p: tensor<i32>, %q: tensor<i32>):
    %gt = accy.compare GT, %a, %b total_order : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %gt : tensor<i1>
  }
  %tv = accy.slice %v [0:8, 0:5] : (tensor<8x1000xf32>) -> tensor<8x5xf32>
  %ti = accy.slice %i [0:8, 0:5] : (tensor<8x1000xi32>) -> tensor<8x5xi32>
  func.return %tv, %ti : tensor<8x5xf32>, tensor<8x5xi32>
}
""",
        (((8, 1000), "float32"),),
        lambda x: _top_k(x, 5),
        ("sort", "sort.merge"),
    ),
    Program(
        "sort_pairs",
        """
func.func @sort_pairs(%k: tensor<300x4xi32>, %v: tensor<300x4xf32>) -> (tensor<300x4xi32>, tensor<300x4xf32>) {
  %sk, %sv = accy.sort(%k, %v : tensor<300x4xi32>, tensor<300x4xf32>), dim = 0 stable -> (tensor<300x4xi32>, tensor<300x4xf32>) {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %p: tensor<f32>, %q: tensor<f32>):
    %lt = accy.compare LT, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
    accy.yield %lt : tensor<i1>
  }
  func.return %sk, %sv : tensor<300x4xi32>, tensor<300x4xf32>
}
""",
        (((300, 4), "int32"), ((300, 4), "float32")),
        lambda k, v: _sorted_along_0(k, v),
        ("sort", "sort.merge", "stable ties"),
    ),
    Program(
        "argmax",
        """
func.func @argmax(%x: tensor<64x777xf32>) -> tensor<64xi32> {
  %iota = accy.iota dim = 1 : tensor<64x777xi32>
  %lowest = accy.constant dense<-3.0e38> : tensor<f32>
  %zero = accy.constant dense<0> : tensor<i32>
  %v, %i = accy.fold(%x, %iota : tensor<64x777xf32>, tensor<64x777xi32>) init(%lowest, %zero : tensor<f32>, tensor<i32>), dims = [1] -> (tensor<64xf32>, tensor<64xi32>) {
  ^bb0(%a: tensor<f32>, %j: tensor<i32>, %b: tensor<f32>, %k: tensor<i32>):
    %gt = accy.compare GT, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %c = accy.select %gt, %b, %a : tensor<i1>, tensor<f32>
    %l = accy.select %gt, %k, %j : tensor<i1>, tensor<i32>
    accy.yield %c, %l : tensor<f32>, tensor<i32>
  }
  func.return %i : tensor<64xi32>
}
""",
        (((64, 777), "float32"),),
        lambda x: (np.argmax(x, axis=1).astype(np.int32),),
        ("fold",),
    ),
    Program(
        "conv2d",
        """
func.func @conv2d(%x: tensor<4x32x32x16xf32>, %w: tensor<3x3x16x32xf32>, %b: tensor<32xf32>) -> tensor<4x32x32x32xf32> {
  %c = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<4x32x32x16xf32>, tensor<3x3x16x32xf32>) -> tensor<4x32x32x32xf32>
  %bb = accy.broadcast_in_dim %b, dims = [3] : (tensor<32xf32>) -> tensor<4x32x32x32xf32>
  %y = accy.add %c, %bb : tensor<4x32x32x32xf32>
  %zero = accy.constant dense<0.0> : tensor<4x32x32x32xf32>
  %r = accy.maximum %y, %zero : tensor<4x32x32x32xf32>
  func.return %r : tensor<4x32x32x32xf32>
}
""",
        (((4, 32, 32, 16), "float32"), ((3, 3, 16, 32), "float32"), ((32,), "float32")),
        lambda x, w, b: (np.maximum(_conv_nhwc_same(x, w) + b, 0),),
        ("convolution",),
        tolerance=1e-4,
    ),
    Program(
        "attention_values",
        """
func.func @attention_values(%w: tensor<1x4x64x64xf32>, %v: tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xf32> {
  %o = accy.dot_general %w, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1] : (tensor<1x4x64x64xf32>, tensor<1x64x4x32xf32>) -> tensor<1x4x64x32xf32>
  %t = accy.transpose %o, dims = [0, 2, 1, 3] : (tensor<1x4x64x32xf32>) -> tensor<1x64x4x32xf32>
  func.return %t : tensor<1x64x4x32xf32>
}
""",
        (((1, 4, 64, 64), "float32"), ((1, 64, 4, 32), "float32")),
        lambda w, v: (np.einsum("bhqk,bkhd->bqhd", w, v),),
        ("dot.tiled", "transpose"),
    ),
    Program(
        "random_bits",
        """
func.func @random_bits() -> (tensor<2xui64>, tensor<2x3xui32>, tensor<2xui64>, tensor<5xui64>) {
  %t = stablehlo.constant dense<[17179869185, 4294967296]> : tensor<2xui64>
  %p = stablehlo.constant dense<[17179869185, 18446744073709551614]> : tensor<2xui64>
  %ts, %tb = stablehlo.rng_bit_generator %t, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui32>)
  %ps, %pb = stablehlo.rng_bit_generator %p, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5xui64>)
  return %ts, %tb, %ps, %pb : tensor<2xui64>, tensor<2x3xui32>, tensor<2xui64>, tensor<5xui64>
}
""",
        (),
        lambda: _xla_random_bits(
            "three_fry_uint32_2x3_state",
            "three_fry_uint32_2x3_bits",
            "philox_uint64_5_state",
            "philox_uint64_5_bits",
        ),
        ("elementwise", "stablehlo"),
        tolerance=0.0,
    ),
    Program(
        "max_pool",
        """
func.func @max_pool(%x: tensor<8x64x64x16xf32>) -> tensor<8x32x32x16xf32> {
  %lowest = accy.constant dense<0xFF800000> : tensor<f32>
  %p = accy.reduce_window(%x : tensor<8x64x64x16xf32>) init(%lowest : tensor<f32>), window = [1, 3, 3, 1], strides = [1, 2, 2, 1], base_dilations = [1, 1, 1, 1], window_dilations = [1, 1, 1, 1], padding_low = [0, 1, 1, 0], padding_high = [0, 0, 0, 0] -> (tensor<8x32x32x16xf32>) {
  ^bb0(%a: tensor<f32>, %c: tensor<f32>):
    %m = accy.maximum %a, %c : tensor<f32>
    accy.yield %m : tensor<f32>
  }
  func.return %p : tensor<8x32x32x16xf32>
}
""",
        (((8, 64, 64, 16), "float32"),),
        lambda x: (_max_pool_3x3_stride_2(x),),
        ("window",),
    ),
    Program(
        "pool_gradient",
        """
func.func @pool_gradient(%x: tensor<4x32x32x8xf32>, %g: tensor<4x16x16x8xf32>) -> tensor<4x32x32x8xf32> {
  %zero = accy.constant dense<0.0> : tensor<f32>
  %r = accy.select_and_scatter %x, %g, %zero, window = [1, 2, 2, 1], strides = [1, 2, 2, 1], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0, 0] : (tensor<4x32x32x8xf32>, tensor<4x16x16x8xf32>, tensor<f32>) -> tensor<4x32x32x8xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = accy.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %ge : tensor<i1>
  } {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = accy.add %a, %b : tensor<f32>
    accy.yield %s : tensor<f32>
  }
  func.return %r : tensor<4x32x32x8xf32>
}
""",
        (((4, 32, 32, 8), "float32"), ((4, 16, 16, 8), "float32")),
        lambda x, g: (_max_pool_2x2_gradient(x, g),),
        ("window",),
    ),
    Program(
        "while_halve",
        """
func.func @while_halve(%x: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<i32>) {
  %zero = accy.constant dense<0> : tensor<i32>
  %tol = accy.constant dense<1.0e-03> : tensor<f32>
  %r, %n = accy.while (%x, %zero : tensor<4096xf32>, tensor<i32>) -> (tensor<4096xf32>, tensor<i32>) cond {
  ^bb0(%c: tensor<4096xf32>, %k: tensor<i32>):
    %a = accy.abs %c : tensor<4096xf32>
    %m = accy.reduce max %a, dims = [0] : (tensor<4096xf32>) -> tensor<f32>
    %more = accy.compare GT, %m, %tol : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %more : tensor<i1>
  } do {
  ^bb0(%b: tensor<4096xf32>, %j: tensor<i32>):
    %half = accy.constant dense<5.000000e-01> : tensor<4096xf32>
    %next = accy.multiply %b, %half : tensor<4096xf32>
    %one = accy.constant dense<1> : tensor<i32>
    %j1 = accy.add %j, %one : tensor<i32>
    accy.yield %next, %j1 : tensor<4096xf32>, tensor<i32>
  }
  func.return %r, %n : tensor<4096xf32>, tensor<i32>
}
""",
        (((4096,), "float32"),),
        lambda x: _halve_until(x, np.float32(1e-3)),
        ("iterate", "data-dependent while"),
    ),
]


def _xla_random_bits(*keys: str) -> tuple[np.ndarray, ...]:
    """What XLA's CPU backend returned for `jax.lax.rng_bit_generator` with the states of
    `random_bits` (tests/data/random, tests/stablehlo/test_random.py)."""
    path = Path(__file__).resolve().parents[2] / "tests" / "data" / "random"
    with np.load(path / "xla_rng_bit_generator.npz") as archive:
        return tuple(archive[key] for key in keys)


def _halve_until(x, tol):
    """Halve `x` until its greatest magnitude is at most `tol`; the halvings counted."""
    count = 0
    while np.abs(x).max() > tol:
        x, count = x * np.float32(0.5), count + 1
    return x, np.int32(count)


def _conv_nhwc_same(x, w):
    """A stride-1 "SAME" NHWC x HWIO convolution, one window position at a time."""
    kh, kw = w.shape[:2]
    padded = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    h, wd = x.shape[1:3]
    out = np.zeros((*x.shape[:3], w.shape[3]), np.float64)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nhwc,co->nhwo", padded[:, i : i + h, j : j + wd], w[i, j])
    return out.astype(np.float32)


def _max_pool_3x3_stride_2(x):
    """3x3 windows 2 apart, padded by one -inf row and column before."""
    padded = np.pad(x, ((0, 0), (1, 0), (1, 0), (0, 0)), constant_values=-np.inf)
    h, w = x.shape[1] // 2, x.shape[2] // 2
    out = np.full((x.shape[0], h, w, x.shape[3]), -np.inf, x.dtype)
    for i in range(3):
        for j in range(3):
            part = padded[:, i : i + 2 * h : 2, j : j + 2 * w : 2]
            out = np.maximum(out, part[:, :h, :w])
    return out


def _max_pool_2x2_gradient(x, g):
    """Each 2x2 window's gradient to its first greatest element (row-major)."""
    n, h, w, c = x.shape
    windows = x.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4)
    first = windows.reshape(n, h // 2, w // 2, c, 4).argmax(axis=-1)
    out = np.zeros((n, h // 2, w // 2, c, 4), x.dtype)
    np.put_along_axis(out, first[..., None], g[..., None], axis=-1)
    out = out.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3)
    return out.reshape(n, h, w, c)


def _top_k(x, k):
    """The `k` greatest of each row, greatest first (ties: the lower index first)."""
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(x, order, 1), order.astype(np.int32)


def _sorted_along_0(keys, values):
    """`keys` sorted along dim 0, stably, `values` permuted with them."""
    order = np.argsort(keys, axis=0, kind="stable")
    return np.take_along_axis(keys, order, 0), np.take_along_axis(values, order, 0)


def _scatter_rows(combine, x, rows, updates):
    """`x` with `updates[k]` combined into row `rows[k]` in order (rows outside `x` are
    skipped, as StableHLO's scatter does)."""
    result = x.copy()
    inside = (rows >= 0) & (rows < x.shape[0])
    combine.at(result, rows[inside], updates[inside])
    return result


def _updated(x, update, starts):
    """`x` with `update` written at `starts`, each clamped into the array (StableHLO)."""
    first = [min(max(s, 0), n - k) for s, n, k in zip(starts, x.shape, update.shape)]
    result = x.copy()
    result[tuple(slice(f, f + k) for f, k in zip(first, update.shape))] = update
    return result


def _block(x, starts, sizes):
    """The `sizes` block of `x` at `starts`, each clamped into the array (StableHLO)."""
    first = [min(max(s, 0), n - k) for s, n, k in zip(starts, x.shape, sizes)]
    return x[tuple(slice(f, f + k) for f, k in zip(first, sizes))]


def _pad_expected(a, v):
    """`a` with one `v` between neighbours along dim 1 (its first column cropped), two
    rows of `v` above and one below."""
    spread = np.full((a.shape[0], 2 * a.shape[1] - 1), v, a.dtype)
    spread[:, ::2] = a
    return np.pad(spread[:, 1:], ((2, 1), (0, 0)), constant_values=v)


LARGE_ELEMENTS = 64 * 1024 * 1024

LARGE_PROGRAMS: list[Program] = [
    Program(
        "large_fused_elementwise",
        f"""
func.func @large_fused_elementwise(%a: tensor<{LARGE_ELEMENTS}xf32>, %b: tensor<{LARGE_ELEMENTS}xf32>, %c: tensor<{LARGE_ELEMENTS}xf32>, %d: tensor<{LARGE_ELEMENTS}xf32>) -> tensor<{LARGE_ELEMENTS}xf32> {{
  %s = accy.add %a, %b : tensor<{LARGE_ELEMENTS}xf32>
  %m = accy.multiply %s, %c : tensor<{LARGE_ELEMENTS}xf32>
  %r = accy.subtract %m, %d : tensor<{LARGE_ELEMENTS}xf32>
  func.return %r : tensor<{LARGE_ELEMENTS}xf32>
}}
""",
        tuple(((LARGE_ELEMENTS,), "float32") for _ in range(4)),
        lambda a, b, c, d: ((a + b) * c - d,),
        ("elementwise",),
        large=True,
        bytes_moved=lambda: 5 * 4 * LARGE_ELEMENTS,
    ),
    Program(
        "large_row_reduce",
        """
func.func @large_row_reduce(%x: tensor<16384x4096xf32>) -> tensor<16384xf32> {
  %r = accy.reduce add %x, dims = [1] : (tensor<16384x4096xf32>) -> tensor<16384xf32>
  func.return %r : tensor<16384xf32>
}
""",
        (((16384, 4096), "float32"),),
        lambda x: (x.sum(axis=1, dtype=np.float64).astype(np.float32),),
        ("reduce.row",),
        large=True,
        tolerance=1e-3,
        bytes_moved=lambda: 4 * 16384 * 4096 + 4 * 16384,
    ),
]

JAX_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "stablehlo"


def _jax_program(stem: str) -> Program:
    """A program JAX exported (tests/data/stablehlo), checked against JAX's own output."""
    data = JAX_DATA / f"{stem}.npz"

    def expected(*_inputs):
        with np.load(data) as archive:
            return (archive["expected"],)

    return Program(
        f"jax_{stem}",
        (JAX_DATA / f"{stem}.stablehlo.mlir").read_text(),
        (),
        expected,
        ("stablehlo",),
        tolerance=1e-4,
        data=data,
        function="main",
    )


JAX_PROGRAMS: list[Program] = [
    _jax_program(stem)
    for stem in ("fused_elementwise", "gelu_chain", "layernorm", "mlp", "softmax")
]

ZOO_DATA = Path(__file__).resolve().parents[1] / "zoo" / "data"


def _zoo_program(stem: str) -> Program:
    """A program of the model zoo (benchmarks/zoo), checked against JAX's outputs with the
    zoo's tolerances."""
    data = ZOO_DATA / f"{stem}.npz"
    facts = json.loads((ZOO_DATA / f"{stem}.xla.json").read_text())

    def expected(*_inputs):
        with np.load(data) as archive:
            return tuple(_arrays(archive, "out"))

    return Program(
        f"zoo_{stem}",
        (ZOO_DATA / f"{stem}.stablehlo.mlir").read_text(),
        (),
        expected,
        ("zoo",),
        tolerance=max(facts.get("rtol", 1e-4), facts.get("atol", 1e-5)),
        data=data,
        function="main",
    )


ZOO_PROGRAMS: list[Program] = [
    _zoo_program(path.name.removesuffix(".stablehlo.mlir"))
    for path in sorted(ZOO_DATA.glob("*.stablehlo.mlir"))
]
"""Every program of the model zoo, exported for CUDA like the check programs."""

ALL_PROGRAMS = PROGRAMS + JAX_PROGRAMS + ZOO_PROGRAMS + LARGE_PROGRAMS


def program(name: str) -> Program:
    return next(p for p in ALL_PROGRAMS if p.name == name)
