"""`scan.multiblock` (CUDA): a scan of rows longer than one tile (`width > SCAN_TILE`).

Each row is cut into tiles of `SCAN_TILE` elements, one block per tile. Phase 1 scans every
tile and stores its total (a carry of `accumulator` bytes: f32 or i32, f64 or i64 for 64-bit
types) in `carries[row, tile]`; phase 2 scans each row's carries; phase 3 adds the carry of
the preceding tiles.
"""

from accy.passes.families.family import ExpressionFamily
from accy.passes.shared_memory import SCAN_TILE

WORKSPACE = "carries"

FAMILY = ExpressionFamily.of(
    "scan.multiblock",
    ["scan"],
    source=__name__,
    when=f"width > {SCAN_TILE}",
    workspaces={WORKSPACE: f"ceil_div(width, {SCAN_TILE}) * kept * accumulator"},
)
