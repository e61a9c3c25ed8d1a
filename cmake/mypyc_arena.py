"""Compile the arena's exact searches to C extensions with mypyc (run by CMakeLists.txt).

``python mypyc_arena.py SOURCE BUILD``: stages the modules of ``SOURCE`` (the
``passes/arena`` folder) as the package ``accy.passes.arena`` under ``BUILD/stage`` (all of
them, so that mypy finds the types the compiled ones import), each module that
``compiled.COMPILED`` lists with the SHA-256 of its source appended as ``COMPILED_FROM``
(``compiled.check`` refuses a compiled module whose source has changed since), and builds
those into ``BUILD/lib``: one extension and one library per module (mypyc's ``separate``
mode), so that every file lands in the package's own folder.
"""

from __future__ import annotations

import hashlib
import os
import runpy
import shutil
import sys
from pathlib import Path

from mypyc.build import mypycify
from setuptools import setup


def main(source: Path, build: Path) -> None:
    # compiled.py imports only the standard library, so it runs here without accy installed
    compiled = runpy.run_path(str(source / "compiled.py"))["COMPILED"]
    stage = build / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    package = stage / "accy" / "passes" / "arena"
    package.mkdir(parents=True)
    for folder in (stage / "accy", stage / "accy" / "passes", package):
        (folder / "__init__.py").write_text("")
    for path in source.glob("*.py"):
        if path.name == "__init__.py":
            continue
        text = path.read_bytes()
        if path.stem in compiled:
            digest = hashlib.sha256(text).hexdigest()
            text += f'\nCOMPILED_FROM = "{digest}"\n'.encode()
        (package / path.name).write_bytes(text)
    os.chdir(stage)
    modules = [f"accy/passes/arena/{name}.py" for name in compiled]
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
