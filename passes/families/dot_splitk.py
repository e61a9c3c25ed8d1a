"""`dot.splitk` (CUDA): split-K over a persistent grid, for long contractions (`k > 4096`).

`sm_count` blocks share the output tiles' k-iterations evenly, so a block's k range may start
or end inside a `SPLITK_TILE` x `SPLITK_TILE` output tile. A block that does not finish a
tile stores its partial accumulator tile (f32, or f64 / i64 for 64-bit types: `accumulator`
bytes each) in its own slot; the block that finishes the tile adds the slots in a fixed
order (deterministic). The workspace depends on the grid only, never on the output's size.
"""

from accy.passes.families.family import ExpressionFamily

SPLITK_TILE = 128
"""Output tile side of the kernel, and of each block's partials slot."""

WORKSPACE = "partials"

FAMILY = ExpressionFamily.of(
    "dot.splitk",
    ["dot"],
    source=__name__,
    when="k > 4096",
    workspaces={WORKSPACE: f"sm_count * {SPLITK_TILE} * {SPLITK_TILE} * accumulator"},
)
