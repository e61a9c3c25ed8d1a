# -*- Python -*-
# ruff: noqa: F821  (lit defines `config` and `lit_config` when it runs this file)
"""lit configuration of accy's FileCheck suites (one folder per area).

Run from anywhere:  `<venv>/bin/lit -v <repo>/lit_tests`

Tools are resolved from the bin directory of the Python running lit (`sys.executable`),
so the venv that runs lit also provides `accy-opt` and `filecheck`; PATH is the fallback.
"""

from __future__ import annotations

import os
import re
import shutil
import sys

import lit.formats

config.name = "accy"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py", ".csv"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "__pycache__"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
# Scratch files (`%t`) go to `Output/` folders beside the tests (ignored by git), unless a
# build's lit.site.cfg.py names another root.
config.test_exec_root = getattr(config, "accy_obj_root", None) or config.test_source_root

_BIN_DIR = os.path.dirname(os.path.abspath(sys.executable))


def _tool(name: str) -> str:
    """The tool next to the running Python, else on PATH, else the bare name."""
    candidate = os.path.join(_BIN_DIR, name)
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name, path=os.environ.get("PATH", ""))
    if found is None:
        lit_config.warning(f"accy lit: tool '{name}' not found next to {sys.executable} or on PATH")
        return name
    return found


def _command(name: str) -> str:
    """A pattern for `name` used as a command word (not inside a path, flag or longer name)."""
    return r"(?<![\w/.%-])" + re.escape(name) + r"(?![\w.-])"


def _literal(path: str) -> str:
    """`path` as an `re.sub` replacement (lit applies substitutions with `re.sub`)."""
    return path.replace("\\", "\\\\")


# `%mlir-check` must come before `%python`'s users are expanded: it reads upstream MLIR on
# stdin, parses and verifies it with the upstream bindings and lowers it to the LLVM dialect
# (printed on stdout), failing with MLIR's diagnostics.
config.substitutions.append(
    ("%mlir-check", _literal(f"{sys.executable} -m accy.mlir_bridge lower -"))
)
config.substitutions.append(("%python", _literal(sys.executable)))
config.substitutions.append((_command("accy-opt"), _literal(_tool("accy-opt"))))
config.substitutions.append((_command("filecheck"), _literal(_tool("filecheck"))))
config.substitutions.append((_command("FileCheck"), _literal(_tool("filecheck"))))

# Keep the environment small and predictable, but let the tools find the venv.
config.environment["PATH"] = os.pathsep.join([_BIN_DIR, os.environ.get("PATH", "")])
for name in ("HOME", "TMPDIR", "PYTHONPATH", "CUDA_HOME", "LD_LIBRARY_PATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
