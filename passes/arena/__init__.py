"""Arena packing: place buffers with lifetimes into one arena (no IR involved).

``pack`` runs every packer its budget covers (with the O(n log n) ``sweep_first_fit`` as the
fallback), the exact searches, each an ``exact.ExactSearch`` (``sweep``: a time sweep over
PQ-trees (``pq_tree``), at the lower bound of arenas full at every section, several sweeps
racing in one process or several (``race``) and joined where none gets through (``stitch``);
``tiling``: exact cover over offset domains, at the lower bound; ``search``: skyline
branch-and-bound), window repacking above the bound (``windows``) and an improvement search;
``check_placement`` verifies a result; ``minimalloc`` reads and writes MiniMalloc CSV problems
and solutions; ``generated`` builds problems whose optimum is known (full at every item), for
benchmarks and tests.

Invariants: ``pack`` returns a valid placement (``check_placement``) no larger than any greedy
packer's, whatever the input order; for the same buffers, budget and caps it is the same
while the node and work caps, not the clock, end the searches; its work is at most
``pack.max_work`` of its arguments.
"""

from accy.passes.arena import compiled
from accy.passes.arena.best_fit import pack_best_fit
from accy.passes.arena.checker import ArenaCheckError, check_placement
from accy.passes.arena.greedy_by_breadth import pack_greedy_by_breadth
from accy.passes.arena.greedy_by_size import pack_greedy_by_size
from accy.passes.arena.improve import improve
from accy.passes.arena.minimalloc import (
    MiniMallocFile,
    MiniMallocFormatError,
    read_minimalloc,
    read_problem,
    read_solution,
    write_solution,
)
from accy.passes.arena.pack import PACKERS, PackResult, pack
from accy.passes.arena.problem import (
    DEFAULT_ALIGNMENT,
    BufferInterval,
    Placement,
    align_up,
    lower_bound,
    overlaps_in_time,
)
from accy.passes.arena.sweep_first_fit import pack_sweep_first_fit

__all__ = [
    "DEFAULT_ALIGNMENT",
    "PACKERS",
    "ArenaCheckError",
    "BufferInterval",
    "MiniMallocFile",
    "MiniMallocFormatError",
    "PackResult",
    "Placement",
    "align_up",
    "check_placement",
    "improve",
    "lower_bound",
    "overlaps_in_time",
    "pack",
    "pack_best_fit",
    "pack_greedy_by_breadth",
    "pack_greedy_by_size",
    "pack_sweep_first_fit",
    "read_minimalloc",
    "read_problem",
    "read_solution",
    "write_solution",
]

compiled.check()  # a compiled module built from an older source would run the old code
