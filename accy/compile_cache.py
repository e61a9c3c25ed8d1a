"""The persistent compile cache of `accy.compile` (CPU) and `accy.export`: compiled
programs kept on disk, so a compile or export of a program compiled before, in any
process, skips lowering and LLVM.

An entry is a directory named by its key, a SHA-256 over what decides the machine code
(`key`, from the caller: the program, a digest of accy's sources (`source_digest`), the
target, the CPU's features, the options). A compile's entry holds the program library
(`program.so`: the JIT's object linked with `cc` and accy's allocation-failure record),
what runs it (`program.json`: the functions' signatures) and the lowered module's text
(`lowered.mlir`); an export's entry holds the export's files. Each has `entry.json`, the
SHA-256 of every file. A compile's entry may also be named by the key of the program's
text (`alias`; the same parts, with the source text and plan options in place of the
planned text), so that a compile of text compiled before finds its entry before
importing or planning anything (`lookup_alias`).

Where: `$ACCY_CACHE_DIR`, else `$XDG_CACHE_HOME/accy`, else `~/.cache/accy`; `ACCY_CACHE=0`
turns the cache off. Invariants:
- an entry is written into a temporary directory beside the others and renamed into
  place whole, so a reader sees a complete entry or none; of concurrent writers of one
  key the first rename wins and the others drop their copies;
- an entry with a file that does not match its recorded digest (truncated, corrupt, half
  deleted) is removed and rebuilt, never loaded;
- a hit touches the entry; past `ACCY_CACHE_MAX_BYTES` (default `DEFAULT_MAX_BYTES`) the
  least recently used entries are removed after a store;
- an alias is a file in `.texts/` holding an entry's name, written whole (temporary file
  and rename); one whose entry is gone is a miss, and is removed by the next eviction;
- a cache that cannot be written (no `cc`, a read-only directory) warns once per process;
  the compile stands.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

FORMAT = 2
"""The layout of an entry; part of every key. 2: `lowered.mlir`, signatures, aliases, every
file's digest recorded."""

DEFAULT_MAX_BYTES = 2 << 30
LIBRARY = "program.so"
PROGRAM = "program.json"
LOWERED = "lowered.mlir"
ENTRY = "entry.json"
ALIASES = ".texts"


def directory() -> Path | None:
    """The cache's directory, or None when `ACCY_CACHE=0`."""
    if os.environ.get("ACCY_CACHE", "1") == "0":
        return None
    explicit = os.environ.get("ACCY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "accy"


def key(**parts: object) -> str:
    """The key of an entry from what decides its machine code (plus `FORMAT`)."""
    text = json.dumps({"format": FORMAT, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest(path: Path) -> str:
    return digest(path.read_bytes())


@functools.cache
def source_digest() -> str:
    """A SHA-256 of accy's sources (the Python of its packages `accy`, `accy.dialects` and
    `accy.passes`, found without importing them, and the C of its native libraries): part
    of every key, so a changed compiler or runtime never runs code an earlier one made."""
    hashed = hashlib.sha256()
    for package in ("accy", "accy.dialects", "accy.passes"):
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        root = Path(spec.origin).parent  # the package's own sources (its __init__.py)
        sources = [p for p in root.rglob("*") if p.suffix in (".py", ".c", ".h")]
        for path in sorted(sources):
            hashed.update(str(path.relative_to(root)).encode())
            hashed.update(path.read_bytes())
    return hashed.hexdigest()


def lookup(root: Path, name: str) -> Path | None:
    """The complete, intact entry `name`, touched; None on a miss (a damaged entry is
    removed: the caller rebuilds it)."""
    entry = root / name
    try:
        recorded = json.loads((entry / ENTRY).read_text())["files"]
        intact = bool(recorded) and all(
            _digest(entry / file) == sha256 for file, sha256 in recorded.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        intact = False
    if not intact:
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        return None
    os.utime(entry)
    return entry


def files(entry: Path) -> list[Path]:
    """The files an entry holds (its record left out)."""
    return sorted(f for f in entry.iterdir() if f.name != ENTRY)


def store(root: Path, name: str, write: Callable[[Path], None]) -> None:
    """Write entry `name` with `write(directory)` (which makes its files), record every
    file's SHA-256, then evict. A failure to write leaves no entry and warns: the compile
    stands."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".writing-", dir=root))
    except OSError as error:
        _warn_once(f"accy: the compile cache {root} is not writable ({error})")
        return
    try:
        write(scratch)
        record = {f.name: _digest(f) for f in files(scratch)}
        (scratch / ENTRY).write_text(json.dumps({"files": record}))
        try:
            os.rename(scratch, root / name)
        except OSError:  # another writer's entry is in place: keep it
            shutil.rmtree(scratch, ignore_errors=True)
    except Exception as error:  # noqa: BLE001 - the program compiled; only caching failed
        shutil.rmtree(scratch, ignore_errors=True)
        _warn_once(f"accy: could not cache a compiled program in {root} ({error})")
        return
    evict(root, int(os.environ.get("ACCY_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES)))


def alias(root: Path, name: str, entry: str) -> None:
    """Name the entry `entry` also `name` (a text key); a failure to write only warns."""
    aliases = root / ALIASES
    try:
        aliases.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=aliases, prefix=".", delete=False) as f:
            f.write(entry)
        os.replace(f.name, aliases / name)
    except OSError as error:
        _warn_once(f"accy: the compile cache {root} is not writable ({error})")


def lookup_alias(root: Path, name: str) -> Path | None:
    """The intact entry named `name` by `alias`, touched; None on a miss."""
    try:
        entry = (root / ALIASES / name).read_text()
    except OSError:
        return None
    if not entry or entry.startswith(".") or "/" in entry:
        return None
    return lookup(root, entry)


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """A `RuntimeWarning`, once per process for each message (a cache that cannot be
    written fails every compile the same way)."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def evict(root: Path, max_bytes: int) -> None:
    """Remove the least recently used entries until the rest take at most `max_bytes`."""
    entries = []
    for entry in root.iterdir():
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            size = sum(f.stat().st_size for f in entry.iterdir())
            entries.append((entry.stat().st_mtime, size, entry))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        total -= size
    if (root / ALIASES).is_dir():
        for name in (root / ALIASES).iterdir():
            try:
                if not name.name.startswith(".") and not (root / name.read_text()).is_dir():
                    name.unlink()
            except OSError:
                continue
