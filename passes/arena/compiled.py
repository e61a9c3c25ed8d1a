"""The arena modules compiled to C extensions at install time, and a check that they are
current.

The exact searches (``pq_tree`` and ``sweep``, ``search``, ``tiling``, ``windows``) are compiled
with mypyc when accy is installed (CMakeLists.txt runs ``cmake/mypyc_arena.py``): the same code,
run several times faster (``benchmarks/sweeps.py`` measures it). Python imports an extension before
the source next to it, so after an edit to a source an editable install would go on running
the old code: each compiled module carries the SHA-256 of the source it was built from
(``COMPILED_FROM``), and ``check`` refuses one whose source has changed since. Run from a
source tree without installing, the modules are plain Python (``compiled_modules`` is then
empty).

Invariants: a compiled module runs the code of the source next to it (``check``, run when
``accy.passes.arena`` is imported, refuses any other), and compiled or not, the searches give
the same results: the same nodes searched, the same placements.

What makes compiled code fast is plain machine integers and few objects, so the compiled
modules keep to these rules:

- sets of PQ-tree leaves as bit masks within a machine word (``sweep.leaf_bits``), not
  frozensets of buffer indices;
- integers kept below 2**30 where they are multiplied (a node's hash): larger ones take the
  arbitrary-precision path, far slower;
- the constants the searches read in their inner loops (node kinds, sentinels) declared
  ``Final``, which compiles them to constants; any other module-level name is looked up in the
  module's globals at each use (harnesses and tests may set the tunable ones), so hot loops
  take such values as arguments;
- lists and tuples typed as such, not as ``Sequence`` (indexing a ``Sequence`` boxes the index
  and calls through Python), and no calls through Python in inner loops (a sort key is one: a
  PQ-tree node's few children are put in order by an insertion sort).

This module imports only the standard library: the build runs it for ``COMPILED``.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path
from types import ModuleType

COMPILED = ("pq_tree", "search", "sweep", "tiling", "windows")
"""The modules ``cmake/mypyc_arena.py`` compiles."""


def stale(module: ModuleType, source: Path) -> bool:
    """Whether ``module`` is compiled from another text than ``source`` (a plain Python module
    never is)."""
    built = getattr(module, "COMPILED_FROM", None)
    if built is None:
        return False
    return hashlib.sha256(source.read_bytes()).hexdigest() != built


def compiled_modules() -> list[str]:
    """The names of ``COMPILED`` that are compiled in this installation."""
    return [
        name
        for name in COMPILED
        if hasattr(importlib.import_module(f"accy.passes.arena.{name}"), "COMPILED_FROM")
    ]


def check() -> None:
    """Raise ``ImportError`` when a compiled module's source has changed since it was built."""
    for name in COMPILED:
        module = importlib.import_module(f"accy.passes.arena.{name}")
        source = Path(__file__).with_name(f"{name}.py")
        if stale(module, source):
            raise ImportError(
                f"accy.passes.arena.{name} was compiled from another {source.name} than "
                f"{source}: reinstall accy (pip install -e .) to compile it again"
            )
