"""Compile the arena's exact searches to C extensions with mypyc (run by CMakeLists.txt).

``python mypyc_arena.py SOURCE BUILD``: stages ``SOURCE`` (the ``passes/arena`` folder) as the
package ``accy.passes.arena`` under ``BUILD/stage``, each compiled module with the SHA-256 of
its source appended as ``COMPILED_FROM`` (``accy.passes.arena.compiled`` refuses a compiled
module whose source has changed since), and builds the extensions into ``BUILD/lib``: one
extension per module and one library per module (mypyc's ``separate`` mode), so that every
file lands in the package's own folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from mypyc.build import mypycify
from setuptools import setup

COMPILED = ("pq_tree", "search", "sweep", "tiling", "windows")
"""The modules compiled: the exact searches, where ``pack`` spends its time."""
TYPED = ("placer", "problem", "restarts", "sections")
"""The modules they import, staged for their types only."""


def main(source: Path, build: Path) -> None:
    stage = build / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    package = stage / "accy" / "passes" / "arena"
    package.mkdir(parents=True)
    for folder in (stage / "accy", stage / "accy" / "passes", package):
        (folder / "__init__.py").write_text("")
    for name in TYPED:
        shutil.copy(source / f"{name}.py", package)
    for name in COMPILED:
        text = (source / f"{name}.py").read_bytes()
        digest = hashlib.sha256(text).hexdigest()
        (package / f"{name}.py").write_bytes(text + f'\nCOMPILED_FROM = "{digest}"\n'.encode())
    os.chdir(stage)
    modules = [f"accy/passes/arena/{name}.py" for name in COMPILED]
    setup(
        name="accy-arena-compiled",
        ext_modules=mypycify(modules, separate=True, opt_level="3"),
        script_args=[
            "--quiet",
            "build_ext",
            "--build-lib",
            str(build / "lib"),
            "--build-temp",
            str(build / "temp"),
        ],
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())
