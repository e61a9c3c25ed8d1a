"""The arena modules compiled with mypyc at install time (``accy.passes.arena.compiled``)."""

from __future__ import annotations

import hashlib
import importlib.machinery
from pathlib import Path
from types import ModuleType

from accy.passes.arena import compiled, pq_tree, search, sweep, tiling, windows


def test_the_exact_searches_run_compiled() -> None:
    # Installed as the README says, CMakeLists.txt compiles them: a build that lost them would
    # run the same searches two to three times slower, and say nothing.
    assert compiled.compiled_modules() == ["pq_tree", "search", "sweep", "tiling", "windows"]
    for module in (pq_tree, search, sweep, tiling, windows):
        assert module.__file__ is not None
        assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_a_module_compiled_from_another_source_is_stale(tmp_path: Path) -> None:
    source = tmp_path / "sweep.py"
    source.write_text("NAME = 'sweep'\n")
    module = ModuleType("sweep")
    assert not compiled.stale(module, source)  # plain Python: never stale
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    module.COMPILED_FROM = digest  # type: ignore[attr-defined]
    assert not compiled.stale(module, source)
    source.write_text("NAME = 'sweep'  # edited\n")
    assert compiled.stale(module, source)
