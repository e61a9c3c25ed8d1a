"""How a `dot_general` reads its operands: the layouts a product reads contiguously.

A product of one contracting dim reads its operands contiguously in one of two forms:

- `columns`: the rhs's last dim is its last free dim (N): each contracting position `k`
  reads a run of N from the rhs (the lhs, one scalar per output row, in any layout);
- `rows`: both operands' last dims are their contracting dims (`A . B^T`): each output
  element reads runs of K from both.

The CPU target's register tiles compute these forms (`dot_tiling`: the tile geometry, which
planning reads to choose a product's family and lowering follows;
`accy.passes.lower.cpu_dot` builds the tiles); `accy-fold-into-dots` folds a transpose or
broadcast into a product only where the product keeps one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.element_types import compute_type, is_float, is_low_precision, shape_of
from xdsl.dialects.builtin import DYNAMIC_INDEX, BFloat16Type, Float32Type, IntegerType
from xdsl.ir import Attribute, Operation

DimPair = tuple[Sequence[int], Sequence[int]]


def free_dims(rank: int, batching: Sequence[int], contracting: Sequence[int]) -> list[int]:
    """An operand's dims that are neither batching nor contracting, in order."""
    return [d for d in range(rank) if d not in batching and d not in contracting]


def contiguous_form(
    lhs_rank: int, rhs_rank: int, batching: DimPair, contracting: DimPair
) -> str | None:
    """`columns`, `rows` or None (see the module docstring)."""
    rb, (lc, rc) = batching[1], contracting
    if len(lc) != 1:
        return None
    r_free = free_dims(rhs_rank, rb, rc)
    if r_free and r_free[-1] == rhs_rank - 1:
        return "columns"
    if r_free and rc[0] == rhs_rank - 1 and lc[0] == lhs_rank - 1:
        return "rows"
    return None


REGISTER_BITS = 512
"""Bits of a `columns` accumulator where N fills it (one AVX-512 register), and of a
`rows` accumulator where K does; `HALF_BITS` otherwise."""

HALF_BITS = 256

WIDE_ROWS = 8
"""Output rows per `columns` tile of full-register accumulators (8 x 2 of 32 registers)."""

HALF_ROWS = 4
"""Output rows per `columns` tile of half-register accumulators."""

TILE_VECTORS = 2
"""`columns` tiles: rhs vectors per tile (where N holds a multiple of them)."""

ROW_TILE = 4
"""`rows` tiles: output rows and columns per tile (4 x 4 accumulators)."""


@dataclass(frozen=True)
class DotTiling:
    """How the CPU's register tiles (`accy.passes.lower.cpu_dot.DotTiles`) compute a
    `dot_general`.

    `lhs_dims` / `rhs_dims` give, for each operand dim, the output dim it walks with (None:
    the contracting dim); `m` and `n` are the output dims of the tile's rows and columns
    (`m` None without lhs free dims); `accumulator` is the accumulators' element type."""

    form: str
    lanes: int
    rows: int
    columns: int
    lhs_dims: tuple[int | None, ...]
    rhs_dims: tuple[int | None, ...]
    m: int | None
    n: int
    accumulator: Attribute


def _block(size: int, most: int) -> int:
    """The largest power of two up to `most` dividing `size`."""
    block = most
    while size % block:
        block //= 2
    return block


def _tiled_accumulator(root: ops.DotGeneralOp) -> Attribute | None:
    """The accumulators' type of a product the tiles compute (f32, f64, i32, i64), else None."""
    accumulator = compute_type(root.result.type.get_element_type())  # type: ignore[attr-defined]
    if is_float(accumulator):
        return accumulator if accumulator.bitwidth in (32, 64) else None  # type: ignore[attr-defined]
    if isinstance(accumulator, IntegerType) and accumulator.width.data in (32, 64):
        return accumulator
    return None


def dot_tiling(root: ops.DotGeneralOp, transposed_panels: bool = False) -> DotTiling | None:
    """The register tiling of `root` on the CPU, or None when it runs as loops (see
    `accy.passes.lower.cpu_dot`). With `transposed_panels`, a `rows`-form product's tiling
    in the `columns` form, its rhs read from panels packed across K (`dot.packed`)."""
    accumulator = _tiled_accumulator(root)
    lhs_shape = root.lhs.type.get_shape()  # type: ignore[attr-defined]
    rhs_shape = root.rhs.type.get_shape()  # type: ignore[attr-defined]
    form = contiguous_form(len(lhs_shape), len(rhs_shape), root.batching, root.contracting)
    if accumulator is None or form is None or DYNAMIC_INDEX in (*lhs_shape, *rhs_shape):
        return None
    if transposed_panels and form == "rows":
        form = "columns"
    (lb, rb), (lc, rc) = root.batching, root.contracting
    l_free, r_free = free_dims(len(lhs_shape), lb, lc), free_dims(len(rhs_shape), rb, rc)
    nb, nl = len(lb), len(l_free)
    lhs_dims: list[int | None] = [None] * len(lhs_shape)
    rhs_dims: list[int | None] = [None] * len(rhs_shape)
    for t, (l_dim, r_dim) in enumerate(zip(lb, rb)):
        lhs_dims[l_dim], rhs_dims[r_dim] = t, t
    for s, d in enumerate(l_free):
        lhs_dims[d] = nb + s
    for s, d in enumerate(r_free):
        rhs_dims[d] = nb + nl + s
    m = nb + nl - 1 if l_free else None
    n = nb + nl + len(r_free) - 1
    m_size = lhs_shape[l_free[-1]] if l_free else 1
    bits = accumulator.bitwidth  # type: ignore[attr-defined]
    wide, half = REGISTER_BITS // bits, HALF_BITS // bits
    if form == "columns":
        n_size = rhs_shape[r_free[-1]]
        lanes = wide if n_size > half else half
        main = n_size - n_size % lanes
        columns = TILE_VECTORS if main and main % (TILE_VECTORS * lanes) == 0 else 1
        most = WIDE_ROWS if lanes == wide else HALF_ROWS
        # tiles of `most` rows (the rows past a multiple of it in one-row tiles: `rows_of`)
        rows = most if m_size >= most else _block(m_size, most)
    else:
        lanes = wide if lhs_shape[lc[0]] >= wide else half
        rows = _block(m_size, ROW_TILE)
        columns = _block(rhs_shape[r_free[-1]], ROW_TILE)
    return DotTiling(
        form, lanes, rows, columns, tuple(lhs_dims), tuple(rhs_dims), m, n, accumulator
    )


CONV_VECTOR_WIDTH = 8
"""f32 lanes of the CPU's convolution register tiles (`vector<8xf32>`: one AVX register)."""


def accumulates_in_output(product: ops.DotGeneralOp, root: Operation) -> bool:
    """Whether the CPU computes `product`, whose kernel's root is `root` (the product, or
    its epilogue's last op), by accumulating into the kernel's output and then replacing
    each element by its epilogue's value (`accy.passes.lower.cpu_kernels.dot`): a product
    without register tiles (`dot_tiling`) of f32, f64 or integers, whose epilogue, if any,
    ends in its type. Such an output is zeroed before the epilogue reads its inputs, so
    it never takes an input's buffer in place (`accy.passes.arena_plan`)."""
    result_type = product.result.type
    element = result_type.get_element_type()  # type: ignore[attr-defined]
    return (
        dot_tiling(product) is None
        and not is_low_precision(element)
        and root.results[0].type == result_type
    )


def convolution_tile_read(root: ops.ConvolutionOp) -> str | None:
    """How the CPU's convolution register tiles (f32 accumulators) read the kernel:
    `direct` (its output features are its last, contiguous dim), `packed` (copied first,
    in f32, into the layout of window positions, input features, output features: the
    family `convolution.packed`), or None when the convolution has no tiles: they need f32
    or bf16 operands and result, a multiple of `CONV_VECTOR_WIDTH` output features in each
    feature or batch group (or `lanewise_input`), all dims static."""
    rank = len(shape_of(root.result))
    types = {v.type.get_element_type() for v in (root.lhs, root.rhs, root.result)}  # type: ignore[attr-defined]
    features = shape_of(root.result)[root.window_list("result_dims")[1]]
    per_group = features // (root.feature_groups * root.batch_groups)
    if not (
        types <= {Float32Type(), BFloat16Type()}
        and (per_group % CONV_VECTOR_WIDTH == 0 or lanewise_input(root))
        and all(DYNAMIC_INDEX not in shape_of(v) for v in (root.lhs, root.rhs, root.result))
    ):
        return None
    return "direct" if root.window_list("rhs_dims")[1] == rank - 1 else "packed"


def lanewise_input(root: ops.ConvolutionOp) -> bool:
    """Whether a convolution's tiles read the input a vector at a time, one output feature
    per lane: one output feature per batch group (a depthwise convolution's weight
    gradient), a multiple of `CONV_VECTOR_WIDTH` of them, the input's batch its last dim
    and the result's batch 1 (output feature o then reads input batch o)."""
    lb = root.window_list("lhs_dims")[0]
    ob, of = root.window_list("result_dims")[:2]
    shape = shape_of(root.result)
    return (
        root.batch_groups > 1
        and shape[of] == root.batch_groups
        and shape[of] % CONV_VECTOR_WIDTH == 0
        and lb == len(shape_of(root.lhs)) - 1
        and shape[ob] == 1
    )


def row_parts(tiling: DotTiling, m_size: int) -> list[tuple[int, int, int]]:
    """The columns-form tiles' rows as `(first row, rows, rows per tile)` parts: tiles of
    `tiling.rows` rows, then one-row tiles for the rows past the last multiple of it."""
    main = m_size - m_size % tiling.rows
    parts = [(0, main, tiling.rows)] if main else []
    return parts + ([(main, m_size - main, 1)] if main != m_size else [])
