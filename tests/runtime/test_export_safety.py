"""`accy.export` and `accy.runtime.load` trust nothing they did not write.

Export: a target directory that is not empty and not an earlier accy export is refused,
and replacing an earlier export touches only that export's files (the directory itself
stays, so `.` works). Load: the manifest is validated; it may name only accy's own files,
inside the directory; the libraries must have the recorded size and sha256 and sound ELF
headers before they are opened; and the functions must be those compiled into the
program library (`accy_export_signature`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accy.aot import ExportError, export
from accy.runtime import load
from accy.runtime.loader import (
    MANIFEST_FORMAT,
    SIGNATURE_SYMBOL,
    InvalidExportError,
    check_elf,
    export_signature,
)

ADD4 = """func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = accy.add %a, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
"""
ROOT = Path(__file__).resolve().parents[2]
ONES = np.ones(4, np.float32)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    return export(ADD4, tmp_path_factory.mktemp("export") / "add4", target="cpu", threads=1)


@pytest.fixture()
def copy(exported: Path, tmp_path: Path):
    """A fresh copy of the export, with its manifest as a dict to tamper with."""
    directory = tmp_path / "copy"
    shutil.copytree(exported, directory)
    return directory, json.loads((directory / "manifest.json").read_text())


def write(directory: Path, manifest: dict) -> None:
    (directory / "manifest.json").write_text(json.dumps(manifest))


def rehash(directory: Path, manifest: dict, name: str = "libaccy_program.so") -> None:
    data = (directory / name).read_bytes()
    manifest["libraries"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def refused(directory: Path, *fragments: str) -> str:
    with pytest.raises(InvalidExportError) as info:
        load(directory)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# ---------------------------------------------------------------------------- export


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_directory_with_an_empty_manifest_and_other_files_is_refused(tmp_path):
    target = tmp_path / "w"
    target.mkdir()
    (target / "manifest.json").write_text("{}\n")
    (target / "keep.txt").write_text("x\n")
    before = files(target)
    with pytest.raises(ExportError) as info:
        export(ADD4, target, target="cpu", threads=1)
    assert info.value.message.startswith(
        f"cannot export to '{target}': it holds files that are not an accy export "
        "(keep.txt, manifest.json)"
    )
    assert files(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w"]  # no scratch left


def test_an_earlier_export_with_a_foreign_file_is_refused(exported, tmp_path):
    target = tmp_path / "w"
    shutil.copytree(exported, target)
    (target / "keep.txt").write_text("x\n")
    before = files(target)
    with pytest.raises(ExportError) as info:
        export(ADD4, target, target="cpu", threads=1)
    assert info.value.message == (
        f"cannot export to '{target}': it holds files that are not an accy export (keep.txt)"
    )
    assert files(target) == before


def test_a_subdirectory_or_a_file_target_is_refused(exported, tmp_path):
    target = tmp_path / "w"
    shutil.copytree(exported, target)
    (target / "sub").mkdir()
    with pytest.raises(ExportError, match=r"not an accy export \(sub\)"):
        export(ADD4, target, target="cpu", threads=1)
    assert (target / "sub").is_dir()
    plain = tmp_path / "plain"
    plain.write_text("mine")
    with pytest.raises(ExportError, match="it exists and is not a directory"):
        export(ADD4, plain, target="cpu", threads=1)
    assert plain.read_text() == "mine"


def test_a_manifest_naming_other_files_does_not_make_them_replaceable(exported, tmp_path):
    target = tmp_path / "w"
    shutil.copytree(exported, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["library"] = "victim.txt"
    write(target, manifest)
    (target / "victim.txt").write_text("mine")
    with pytest.raises(ExportError, match="'library' must be 'libaccy_program.so'"):
        export(ADD4, target, target="cpu", threads=1)
    assert (target / "victim.txt").read_text() == "mine"


def test_export_to_the_working_directory(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "add4.mlir").write_text(ADD4)
    monkeypatch.chdir(work)
    with pytest.raises(ExportError, match=r"cannot export to '\.': .*\(add4\.mlir\)"):
        export(ADD4, ".", target="cpu", threads=1)
    assert [p.name for p in work.iterdir()] == ["add4.mlir"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    inode = os.stat(".").st_ino
    for threads in (2, 1):  # the second replaces the first in place
        assert export(ADD4, ".", target="cpu", threads=threads) == Path(".")
        assert os.stat(os.getcwd()).st_ino == inode
    assert sorted(os.listdir(".")) == ["libaccy_program.so", "manifest.json"]
    (y,) = load(".").f(ONES, ONES)
    np.testing.assert_array_equal(y, 2 * ONES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "work"]


def test_replacing_removes_only_the_earlier_exports_files(tmp_path):
    target = tmp_path / "art"
    export(ADD4, target, target="cpu", threads=2)
    assert (target / "libaccy_async_runtime.so").is_file()
    inode = target.stat().st_ino
    export(ADD4, target, target="cpu", threads=1)
    assert target.stat().st_ino == inode
    assert sorted(p.name for p in target.iterdir()) == ["libaccy_program.so", "manifest.json"]
    assert oct(target.stat().st_mode & 0o777) != oct(0o700)  # not the scratch's mode


@pytest.mark.parametrize("fmt", [1, 2])
def test_an_earlier_format_export_is_replaced(exported, tmp_path, fmt):
    """Formats 1 and 2 named a function's symbol `_mlir_ciface_<name>`; 1 recorded no
    libraries."""
    target = tmp_path / "old"
    shutil.copytree(exported, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["format"] = fmt
    manifest["functions"]["f"]["symbol"] = "_mlir_ciface_f"
    if fmt == 1:
        del manifest["libraries"]
    write(target, manifest)
    with pytest.raises(InvalidExportError, match=f"manifest format {fmt}, this loader reads"):
        load(target)
    export(ADD4, target, target="cpu", threads=1)
    assert json.loads((target / "manifest.json").read_text())["format"] == MANIFEST_FORMAT


def test_a_failed_export_leaves_the_earlier_one(exported, tmp_path):
    target = tmp_path / "w"
    shutil.copytree(exported, target)
    before = files(target)
    with pytest.raises(ExportError, match="linking libaccy_program.so failed"):
        export(ADD4, target, target="cpu", threads=1, cc="false")
    assert files(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w"]


# ---------------------------------------------------------------------------- load


def test_the_export_loads_and_records_its_libraries(exported):
    manifest = json.loads((exported / "manifest.json").read_text())
    assert manifest["format"] == MANIFEST_FORMAT == 3
    data = (exported / "libaccy_program.so").read_bytes()
    assert manifest["libraries"] == {
        "libaccy_program.so": {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    }
    module = load(exported)
    (y,) = module.f(ONES, ONES)
    np.testing.assert_array_equal(y, 2 * ONES)
    import ctypes

    cell = ctypes.c_char.in_dll(module.library, SIGNATURE_SYMBOL)
    assert ctypes.string_at(ctypes.addressof(cell)).decode() == export_signature(manifest)
    module.close()


@pytest.mark.parametrize(
    "library",
    ["../libaccy_program.so", "/lib/x86_64-linux-gnu/libm.so.6", "libm.so.6", "sub/x.so"],
)
def test_the_library_must_be_accys_own_name(copy, library):
    directory, manifest = copy
    manifest["library"] = library
    write(directory, manifest)
    refused(directory, "manifest.json: 'library' must be 'libaccy_program.so'", repr(library))


def test_a_symbol_must_be_the_functions_c_interface(copy):
    directory, manifest = copy
    manifest["functions"]["f"]["symbol"] = "cos"
    write(directory, manifest)
    refused(directory, "function 'f': symbol must be '_mlir_ciface_accy_fn_f', got 'cos'")


def test_functions_must_be_those_compiled_in(copy):
    directory, manifest = copy
    entry = manifest["functions"].pop("f")
    manifest["functions"]["cos"] = dict(entry, symbol="_mlir_ciface_accy_fn_cos")
    write(directory, manifest)
    refused(directory, "does not describe the functions compiled into libaccy_program.so")


@pytest.mark.parametrize(
    ("edit", "detail"),
    [
        (lambda f: f["args"][0].update(shape=[2]), "@f argument #0: float32(2,) in the manifest"),
        (lambda f: f["results"][0].update(shape=[1]), "@f result #0: float32(1,) in the manifest"),
        (lambda f: f["args"][1].update(dtype="int32"), "@f argument #1: int32(4,)"),
        (lambda f: f["args"][0].update(shape=["?"]), "@f argument #0: float32(?,)"),
        (lambda f: f["args"].pop(), "@f: 1 arguments in the manifest, 2 compiled"),
    ],
)
def test_shapes_and_dtypes_must_match_the_library(copy, edit, detail):
    directory, manifest = copy
    edit(manifest["functions"]["f"])
    write(directory, manifest)
    refused(directory, detail, "compiled")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ('{"format": 2, ', "manifest.json: is not valid JSON (Expecting property name"),
        ("[]", "the manifest must be a JSON object, got list"),
        ('{"format": 2}', "the manifest has no 'target'"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_malformed_manifests_are_clear_errors(copy, text, detail):
    directory, _ = copy
    path = directory / "manifest.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    refused(directory, detail)


@pytest.mark.parametrize(
    ("edit", "detail"),
    [
        (lambda m: m.update(format=7), "manifest format 7, this loader reads format 3"),
        (lambda m: m.update(format=1), "manifest format 1"),
        (lambda m: m.update(target="tpu"), "target must be one of cpu, cuda, got 'tpu'"),
        (lambda m: m.update(functions=[1]), "'functions' must be an object, got list"),
        (lambda m: m["functions"]["f"].pop("args"), "function 'f' has no 'args'"),
        (lambda m: m["functions"].update(f=3), "function 'f' must be an object, got int"),
        (lambda m: m["functions"]["f"].update(args=[{"shape": 4}]), "args[0] must be an object"),
        (
            lambda m: m["functions"]["f"]["args"][0].update(shape=[-1]),
            "args[0].shape must be a list of sizes",
        ),
        (
            lambda m: m["functions"]["f"]["args"][0].update(dtype="object"),
            "args[0].dtype must be one of",
        ),
        (lambda m: m.update(runtime="libaccy_runtime.so"), "'runtime' must be null for cpu"),
        (lambda m: m.update(async_runtime="../a.so"), "'async_runtime' must be null or"),
        (lambda m: m.update(kernels={"k": "../k.ptx"}), "'kernels' must be empty for cpu"),
        (lambda m: m.pop("libraries"), "'libraries' must record exactly"),
        (
            lambda m: m["libraries"]["libaccy_program.so"].update(sha256="x"),
            "must be {'bytes': size, 'sha256': 64 hex digits}",
        ),
        (lambda m: m.update(threads="2"), "'threads' must be an integer >= 1"),
    ],
)
def test_the_manifest_schema_is_checked(copy, edit, detail):
    directory, manifest = copy
    edit(manifest)
    write(directory, manifest)
    refused(directory, detail)


def test_a_missing_export_or_library_is_file_not_found(copy, tmp_path):
    directory, _ = copy
    with pytest.raises(FileNotFoundError, match="no such directory"):
        load(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError, match="is not an accy export: no manifest.json"):
        load(tmp_path)
    (directory / "libaccy_program.so").unlink()
    with pytest.raises(FileNotFoundError, match="libaccy_program.so: missing"):
        load(directory)


def test_a_library_symlinked_out_of_the_directory_is_refused(copy, tmp_path):
    directory, _ = copy
    library = directory / "libaccy_program.so"
    outside = tmp_path / "outside.so"
    library.rename(outside)
    library.symlink_to(outside)
    refused(directory, "libaccy_program.so: is a symbolic link")


def test_an_altered_library_is_refused_before_it_is_opened(copy):
    directory, _ = copy
    library = directory / "libaccy_program.so"
    data = bytearray(library.read_bytes())
    data[-1] ^= 0xFF
    library.write_bytes(bytes(data))
    refused(directory, "libaccy_program.so: its sha256 differs")


def test_a_truncated_library_is_refused_not_a_crash(exported, tmp_path):
    """In a subprocess: opening a truncated library dies with SIGBUS, so a crash here
    must not take pytest with it."""
    script = f"""
import hashlib, json, shutil, sys
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from accy.runtime import load
from accy.runtime.loader import InvalidExportError
directory = Path({str(tmp_path / "t")!r})
shutil.copytree({str(exported)!r}, directory)
library = directory / "libaccy_program.so"
data = library.read_bytes()[:6000]
library.write_bytes(data)
for rehash in (False, True):
    if rehash:  # the manifest edited to match: the ELF headers still tell
        manifest = json.loads((directory / "manifest.json").read_text())
        manifest["libraries"]["libaccy_program.so"] = {{
            "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}}
        (directory / "manifest.json").write_text(json.dumps(manifest))
    try:
        load(directory)
    except InvalidExportError as error:
        print(error)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert "libaccy_program.so: is 6000 bytes, but the manifest records" in first
    assert "libaccy_program.so: its ELF" in second and "past the end of the file" in second


def test_elf_checks(exported, tmp_path):
    data = (exported / "libaccy_program.so").read_bytes()
    check_elf(tmp_path, data)
    with pytest.raises(InvalidExportError, match="is not an ELF shared library"):
        check_elf(tmp_path, b"not an elf" * 10)
    header = bytearray(data[:64])
    struct.pack_into("<Q", header, 0x28, 0)  # no section headers: the segments still tell
    with pytest.raises(InvalidExportError, match=r"ELF segment #\d+ ends at byte"):
        check_elf(tmp_path, bytes(header) + data[64:4096])
    with pytest.raises(InvalidExportError, match="program headers do not fit"):
        check_elf(tmp_path, data[:100])


def test_a_library_without_a_signature_is_refused(copy, tmp_path):
    directory, manifest = copy
    source = tmp_path / "plain.c"
    source.write_text("void _mlir_ciface_accy_fn_f(void *a, void *b, void *c) {}\n")
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(directory / "libaccy_program.so"), str(source)],
        check=True,
    )
    rehash(directory, manifest)
    write(directory, manifest)
    refused(directory, f"libaccy_program.so: has no {SIGNATURE_SYMBOL}")
