"""`reduce.split` (CUDA): a two-phase reduction for wide rows (`k > 4096`).

Phase 1 launches a grid of `sm_count * SPLIT_BLOCKS_PER_SM` blocks (eight resident blocks per
SM); block b folds slice b of every row (slices of ceil_div(width, grid) elements) into one
accumulator of `accumulator` bytes (f32 or i32, f64 or i64 for 64-bit types) per row, at
`partials[row * grid + b]`. Phase 2 folds each row's partials into the result.
"""

from accy.passes.families.family import ExpressionFamily

SPLIT_BLOCKS_PER_SM = 8
"""Phase-1 blocks per SM: the grid the kernel launches and its workspace's size."""

WORKSPACE = "partials"

FAMILY = ExpressionFamily.of(
    "reduce.split",
    ["reduce"],
    source=__name__,
    when="k > 4096",
    workspaces={WORKSPACE: f"kept * sm_count * {SPLIT_BLOCKS_PER_SM} * accumulator"},
)
