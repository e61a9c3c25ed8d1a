"""Locate accy's native libraries: the GPU runtime, the async (CPU thread pool) runtime
and the fake CUDA driver.

The build (CMakeLists.txt, run by scikit-build-core) installs
``libaccy_runtime.so``, ``libaccy_async_runtime.so`` and ``libaccy_fake_cuda.so`` into the package at
``accy/runtime/lib``. Where that directory ends up depends on the install:

* a wheel (``pip install .``): next to this file, ``<site-packages>/accy/runtime/lib``;
* an editable install (``pip install -e .``, scikit-build-core's redirect mode):
  this file stays in the source tree while the built libraries are installed
  into ``<site-packages>/accy/runtime/lib``;
* a developer build (``cmake -S . -B build/dev && cmake --build build/dev``):
  the CMake build tree under ``build/``.

The environment variable ``ACCY_NATIVE_LIB_DIR`` names a directory that is
searched first. This module imports only the standard library.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = [
    "ASYNC_RUNTIME_LIBRARY_NAME",
    "FAKE_DRIVER_LIBRARY_NAME",
    "RUNTIME_LIBRARY_NAME",
    "NativeLibraryNotFoundError",
    "async_runtime_library_path",
    "fake_driver_library_path",
    "runtime_library_path",
]

RUNTIME_LIBRARY_NAME = "libaccy_runtime.so"
ASYNC_RUNTIME_LIBRARY_NAME = "libaccy_async_runtime.so"
FAKE_DRIVER_LIBRARY_NAME = "libaccy_fake_cuda.so"
LIBRARY_DIR_VARIABLE = "ACCY_NATIVE_LIB_DIR"

_PACKAGE_DIR = Path(__file__).resolve().parent  # .../accy/runtime
_SOURCE_ROOT = _PACKAGE_DIR.parent.parent  # the checkout, for source trees


class NativeLibraryNotFoundError(FileNotFoundError):
    """A native library of accy is not built or not installed where expected."""


def _candidate_directories() -> list[Path]:
    """Directories that may hold the libraries, most specific first."""
    candidates: list[Path] = []
    override = os.environ.get(LIBRARY_DIR_VARIABLE)
    if override:
        candidates.append(Path(override))
    # Next to this file: a wheel install, or an in-place build.
    candidates.append(_PACKAGE_DIR / "lib")
    # An editable install keeps the sources here but installs built files into
    # site-packages; scikit-build-core's redirect mode lists that directory in
    # the package's __path__. Other sys.path entries are searched as well.
    package = sys.modules.get(__package__ or "")
    for entry in getattr(package, "__path__", []):
        candidates.append(Path(entry) / "lib")
    for entry in sys.path:
        if entry and Path(entry).is_dir():
            candidates.append(Path(entry) / "accy" / "runtime" / "lib")
    # A CMake build tree in the checkout (build/<wheel tag>/, build/dev/, ...).
    build_root = _SOURCE_ROOT / "build"
    if (_SOURCE_ROOT / "CMakeLists.txt").is_file() and build_root.is_dir():
        candidates.extend(sorted(p for p in build_root.iterdir() if p.is_dir()))
    unique: list[Path] = []
    for directory in candidates:
        if directory not in unique:
            unique.append(directory)
    return unique


def _find(name: str) -> Path:
    searched = _candidate_directories()
    for directory in searched:
        path = directory / name
        if path.is_file():
            return path
    looked = "\n  ".join(str(d) for d in searched)
    raise NativeLibraryNotFoundError(
        f"accy's native library {name} was not found; looked in:\n  {looked}\n"
        f"Build and install it with `pip install -e .` (or `pip install .`) "
        f"from the accy checkout ({_SOURCE_ROOT}), or set {LIBRARY_DIR_VARIABLE} "
        f"to the directory that holds it."
    )


def runtime_library_path() -> Path:
    """The path of libaccy_runtime.so, the MLIR GPU runtime ABI over the CUDA driver."""
    return _find(RUNTIME_LIBRARY_NAME)


def async_runtime_library_path() -> Path:
    """The path of libaccy_async_runtime.so, the MLIR async runtime ABI
    (``mlirAsyncRuntime*``) over a thread pool: what the CPU target's parallel loops
    call."""
    return _find(ASYNC_RUNTIME_LIBRARY_NAME)


def fake_driver_library_path() -> Path:
    """The path of libaccy_fake_cuda.so, the fake CUDA driver for tests (runs no kernel).

    Set the environment variable ``ACCY_CUDA_DRIVER`` to this path before the
    runtime's first call to make the runtime use it.
    """
    return _find(FAKE_DRIVER_LIBRARY_NAME)
