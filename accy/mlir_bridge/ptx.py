"""Kernels: ``gpu.module`` -> ``gpu.binary`` holding PTX, with the NVPTX bindings.

`compile_kernels_to_ptx` runs `KERNEL_PIPELINE` (no GPU needed), `find_libdevice` finds
``libdevice.10.bc`` for kernels that call its math (`LibdeviceNotFoundError` lists where it
looked), and `extract_ptx` reads the PTX out of the printed binaries: pure text scanning,
which needs the bindings only for binaries printed in generic form.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from accy.mlir_bridge.bindings import _any_parser, _nvptx, _Session
from accy.mlir_bridge.errors import LibdeviceNotFoundError
from accy.mlir_bridge.pipelines import KERNEL_PIPELINE

_LIBDEVICE_NAME = "libdevice.10.bc"


def find_libdevice(*, required: bool = True) -> Path | None:
    """Locate ``libdevice.10.bc``: ``$ACCY_LIBDEVICE`` (a file), then
    ``$CUDA_HOME``/``$CUDA_PATH``/``/usr/local/cuda`` ``nvvm/libdevice/``, then the
    ``nvidia-cuda-nvcc`` wheel (``nvidia/cuda_nvcc/nvvm/libdevice`` or
    ``nvidia/cu13/nvvm/libdevice``). Raises ``LibdeviceNotFoundError`` when absent and
    ``required``, else returns None."""
    cands: list[Path] = []
    env = os.environ.get("ACCY_LIBDEVICE")
    if env:
        cands.append(Path(env))
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        v = os.environ.get(var)
        if v:
            cands.append(Path(v) / "nvvm" / "libdevice" / _LIBDEVICE_NAME)
    cands.append(Path("/usr/local/cuda/nvvm/libdevice") / _LIBDEVICE_NAME)
    try:
        import nvidia  # type: ignore[import-not-found]

        for base in getattr(nvidia, "__path__", []):
            for sub in ("cuda_nvcc", "cu13", "cu12"):
                cands.append(Path(base) / sub / "nvvm" / "libdevice" / _LIBDEVICE_NAME)
    except ImportError:
        pass
    for c in cands:
        if c.is_file():
            return c.resolve()
    if required:
        raise LibdeviceNotFoundError(
            f"{_LIBDEVICE_NAME} not found (looked in: {', '.join(str(c) for c in cands)}); "
            "install the CUDA toolkit, set CUDA_HOME or ACCY_LIBDEVICE, or "
            "pip install nvidia-cuda-nvcc"
        )
    return None


_OPT_CHARS = re.compile(r"^[A-Za-z0-9_./+\-]+$")


def compile_kernels_to_ptx(
    text: str,
    *,
    chip: str = "sm_90",
    opt: int = 3,
    libdevice: Path | str | None = None,
    features: str | None = None,
) -> str:
    """Compile every ``gpu.module`` in ``text`` to a ``gpu.binary`` holding PTX.

    Runs ``KERNEL_PIPELINE`` with ``nvvm-attach-target{chip=CHIP O=OPT l=LIBDEVICE}``
    on the NVPTX-capable bindings and returns the whole module as text (host code
    untouched; it parses in the host bindings). ``libdevice=None`` looks it up with
    ``find_libdevice``; if it is missing and the PTX calls ``__nv_*`` functions,
    ``LibdeviceNotFoundError`` is raised. No GPU is needed.
    """
    lib = Path(libdevice) if libdevice is not None else find_libdevice(required=False)
    if lib is not None and not lib.is_file():
        raise LibdeviceNotFoundError(f"libdevice {lib} does not exist")
    opts = [f"chip={chip}", f"O={int(opt)}"]
    if features:
        opts.append(f"features={features}")
    if lib is not None:
        if not _OPT_CHARS.match(str(lib)):
            raise ValueError(
                f"libdevice path {str(lib)!r} has characters a pass option cannot carry"
            )
        opts.append(f"l={lib}")
    for v in (chip, features or ""):
        if v and not _OPT_CHARS.match(v):
            raise ValueError(f"bad nvvm-attach-target option {v!r}")
    s = _Session(_nvptx())
    module = s.parse(text)
    s.run(
        module, KERNEL_PIPELINE.format(target=" ".join(opts)), f"compiling kernels to PTX ({chip})"
    )
    with s.ctx:
        out = str(module)
    if lib is None:
        missing = sorted(
            {m for ptx in extract_ptx(out).values() for m in re.findall(r"\b(__nv_\w+)", ptx)}
        )
        if missing:
            find_libdevice(required=True)  # raises with the search list
    return out


_BINARY_RE = re.compile(r"gpu\.binary\s+@(\"(?:[^\"\\]|\\.)*\"|[\w$.]+)")
_OBJ_RE = re.compile(r"#gpu\.object<\s*#(\w+)\.target<([^>]*)>")


def _read_mlir_string(s: str, i: int) -> tuple[str, int]:
    """Decode the MLIR string literal whose opening quote is at ``s[i]``."""
    assert s[i] == '"'
    out = bytearray()
    i += 1
    n = len(s)
    while i < n:
        c = s[i]
        if c == '"':
            return out.decode("utf-8", errors="replace"), i + 1
        if c == "\\":
            nxt = s[i + 1]
            if nxt in '\\"':
                out += nxt.encode()
                i += 2
            elif nxt == "n":
                out += b"\n"
                i += 2
            elif nxt == "t":
                out += b"\t"
                i += 2
            else:
                out.append(int(s[i + 1 : i + 3], 16))
                i += 3
        else:
            j = i
            while j < n and s[j] not in '"\\':
                j += 1
            out += s[i:j].encode("utf-8")
            i = j
    raise ValueError("unterminated MLIR string literal")


def extract_ptx(text: str) -> dict[str, str]:
    """Map each ``gpu.binary`` symbol name to its PTX (``format=isa`` objects).

    Pure text scanning (no bindings needed) of the custom form that
    ``compile_kernels_to_ptx`` prints. A binary with several objects yields
    ``name`` for the first and ``name:chip`` for every object."""
    result: dict[str, str] = {}
    if '"gpu.binary"' in text:  # generic form: reprint in custom form first
        s = _Session(_any_parser())
        m = s.parse(text)
        with s.ctx:
            text = str(m)
    for bm in _BINARY_RE.finditer(text):
        name = bm.group(1).strip('"')
        start = bm.end()
        nxt = _BINARY_RE.search(text, start)
        stop = nxt.start() if nxt else len(text)
        pos = start
        first = True
        while True:
            om = _OBJ_RE.search(text, pos, stop)
            if not om:
                break
            chip_m = re.search(r'chip\s*=\s*"([^"]*)"', om.group(2))
            a = text.find("assembly = ", om.end(), stop)
            if a < 0:
                pos = om.end()
                continue
            ptx, pos = _read_mlir_string(text, a + len("assembly = "))
            if first:
                result[name] = ptx
                first = False
            if chip_m:
                result[f"{name}:{chip_m.group(1)}"] = ptx
    return result
