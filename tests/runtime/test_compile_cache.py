"""The persistent compile cache of `accy.compile` on the CPU (`accy.compile_cache`): a hit
runs the linked library of an earlier compile (no lowering, no LLVM) with the same values;
each part of the key misses on its own; concurrent writers leave one entry; a damaged
entry is rebuilt, never loaded; the least recently used entries go past the size bound;
`ACCY_CACHE=0` writes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import accy
from accy import compile_cache, mlir_bridge
from accy.targets import cpu, cpu_executable

PROGRAM = """func.func @f(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {{
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = accy.constant dense<{bias}> : tensor<64x64xf32>
  %z = accy.add %y, %c : tensor<64x64xf32>
  %t = accy.tanh %z : tensor<64x64xf32>
  func.return %t : tensor<64x64xf32>
}}"""

RNG = np.random.default_rng(2)
ARGS = [RNG.standard_normal((64, 64)).astype(np.float32) for _ in range(2)]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("ACCY_CACHE", "1")
    monkeypatch.setenv("ACCY_CACHE_DIR", str(root))
    return root


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


def _compile(bias: float = 0.5, **options):
    return accy.compile(PROGRAM.format(bias=bias), **options)


def test_a_hit_runs_the_cached_library_with_the_same_values(cache):
    first = _compile()
    assert isinstance(first.jit, mlir_bridge.JitModule) and len(_entries(cache)) == 1
    second = _compile()
    assert isinstance(second.jit, mlir_bridge.LibraryModule)
    assert second.lowered_text == first.lowered_text
    want = np.tanh(ARGS[0] @ ARGS[1] + np.float32(0.5))
    for exe in (first, second):
        np.testing.assert_allclose(exe(*ARGS)[0], want, rtol=1e-5, atol=1e-5)
    assert len(_entries(cache)) == 1


def test_a_hit_in_a_new_process_needs_neither_xdsl_nor_the_bindings(cache):
    _compile()
    script = (
        "import sys, accy, numpy as np\n"
        f"exe = accy.compile({PROGRAM.format(bias=0.5)!r})\n"
        "loaded = sorted(m for m in ('xdsl', 'torch_mlir') if m in sys.modules)\n"
        "rng = np.random.default_rng(2)\n"
        "x, w = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))\n"
        "right = np.allclose(exe(x, w)[0], np.tanh(x @ w + 0.5), atol=1e-5)\n"
        "print(type(exe.jit).__name__, loaded, right)\n"
        "print(exe.preparation is not None, exe.planned.ops.first.sym_name.data)\n"
        "print('accy_fn_f' in exe.lowered_text)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["LibraryModule [] True", "True f", "True"]


def test_text_compiled_before_is_found_by_its_text(cache, tmp_path):
    path = tmp_path / "program.mlir"
    path.write_text(PROGRAM.format(bias=0.5))
    for source in (PROGRAM.format(bias=0.5), path, str(path)):
        accy.compile(source)  # (the first compiles; each later one is a hit)
    assert len(_entries(cache)) == 1
    assert len(list((cache / compile_cache.ALIASES).iterdir())) == 2  # the text, the file
    exe = accy.compile(path)
    assert isinstance(exe.jit, mlir_bridge.LibraryModule)
    assert "preparation" not in exe.__dict__  # not computed until asked for
    assert exe.preparation.arena.constant_size == accy.prepare(accy.parse(path)).arena.constant_size
    assert exe.planned is exe.__dict__["planned"]  # computed with the preparation


def test_stablehlo_text_compiles_and_hits_by_its_text(cache):
    text = (Path(__file__).parents[1] / "data/stablehlo/gelu_chain.stablehlo.mlir").read_text()
    first = accy.compile(text)
    second = accy.compile(text)
    assert isinstance(first.jit, mlir_bridge.JitModule)
    assert isinstance(second.jit, mlir_bridge.LibraryModule)
    assert second.module.is_structurally_equivalent(accy.import_stablehlo(text))


def test_the_text_key_holds_the_plan_options(cache):
    dynamic = """func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = accy.exponential %x : tensor<?x64xf32>
  %z = accy.tanh %y : tensor<?x64xf32>
  func.return %z : tensor<?x64xf32>
}"""
    for rows in (64, 128, 64):
        accy.compile(dynamic, rows=[rows])
    # one text key for each rows value, naming one entry (both plans are the same)
    assert len(list((cache / compile_cache.ALIASES).iterdir())) == 2
    assert len(_entries(cache)) == 1


def test_options_that_are_not_plain_data_skip_the_text_key(cache):
    budget = accy.Budget()
    accy.compile(PROGRAM.format(bias=0.5), budget=budget)
    exe = accy.compile(PROGRAM.format(bias=0.5), budget=budget)
    assert isinstance(exe.jit, mlir_bridge.LibraryModule)  # found by its planned text
    assert not (cache / compile_cache.ALIASES).exists()


def test_an_alias_of_an_evicted_entry_is_a_miss_and_goes(cache, monkeypatch):
    _compile(bias=0.1)
    (first,) = _entries(cache)
    (alias,) = (cache / compile_cache.ALIASES).iterdir()
    shutil.rmtree(first)
    exe = _compile(bias=0.1)
    assert isinstance(exe.jit, mlir_bridge.JitModule) and alias.read_text() == first.name
    shutil.rmtree(first)
    compile_cache.evict(cache, 1 << 40)
    assert not alias.exists()


@pytest.mark.parametrize(
    "change",
    ["program", "threads", "opt_level", "features", "sources"],
)
def test_each_part_of_the_key_misses_on_its_own(cache, monkeypatch, change):
    _compile(threads=2)
    if change == "program":
        exe = _compile(bias=0.25, threads=2)
    elif change == "threads":
        exe = _compile(threads=1)
    elif change == "opt_level":
        module = accy.parse(PROGRAM.format(bias=0.5))
        exe = cpu.build(module, accy.prepare(module), threads=2, opt_level=2)
    elif change == "features":
        monkeypatch.setattr(
            cpu_executable, "host_flags", lambda: frozenset({"a_feature_no_cpu_has"})
        )
        exe = _compile(threads=2)
    else:
        monkeypatch.setattr(compile_cache, "source_digest", lambda: "another accy")
        exe = _compile(threads=2)
    assert isinstance(exe.jit, mlir_bridge.JitModule)
    assert len(_entries(cache)) == 2


def test_concurrent_writers_leave_one_entry(cache):
    script = f"import accy; accy.compile({PROGRAM.format(bias=0.75)!r})"
    writers = [
        subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for writer in writers:
        assert writer.wait() == 0, writer.stderr.read()
    assert len(_entries(cache)) == 1
    assert not [p for p in cache.iterdir() if p.name.startswith(".writing-")]
    assert isinstance(_compile(bias=0.75).jit, mlir_bridge.LibraryModule)


@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_a_damaged_entry_is_rebuilt_not_loaded(cache, damage):
    _compile()
    (entry,) = _entries(cache)
    library = entry / compile_cache.LIBRARY
    if damage == "truncated":
        library.write_bytes(library.read_bytes()[:100])
    else:
        library.unlink()
    exe = _compile()
    assert isinstance(exe.jit, mlir_bridge.JitModule)
    np.testing.assert_allclose(
        exe(*ARGS)[0], np.tanh(ARGS[0] @ ARGS[1] + np.float32(0.5)), rtol=1e-5, atol=1e-5
    )
    assert isinstance(_compile().jit, mlir_bridge.LibraryModule)


def test_the_least_recently_used_entries_go_past_the_bound(cache, monkeypatch):
    _compile(bias=0.1)
    (first,) = _entries(cache)
    size = sum(f.stat().st_size for f in first.iterdir())
    monkeypatch.setenv("ACCY_CACHE_MAX_BYTES", str(int(size * 2.5)))
    _compile(bias=0.2)
    os.utime(first, (1, 1))  # the first is now the least recently used
    _compile(bias=0.3)
    entries = _entries(cache)
    assert len(entries) == 2 and first not in entries


def test_the_off_switch_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCY_CACHE", "0")
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path / "cache"))
    exe = _compile()
    assert isinstance(exe.jit, mlir_bridge.JitModule)
    assert not (tmp_path / "cache").exists()


def test_the_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("ACCY_CACHE", raising=False)
    monkeypatch.delenv("ACCY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.directory() == tmp_path / "accy"
    monkeypatch.setenv("ACCY_CACHE_DIR", str(tmp_path / "mine"))
    assert compile_cache.directory() == tmp_path / "mine"


def test_a_cached_program_reports_a_failed_allocation(cache):
    # tests/lower/test_allocation_failure.py's 200 TB arena, run from the cached library
    from accy.diagnostics import AccyMemoryError

    n = 5_000_000
    program = f"""func.func @f(%a: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %0 = accy.broadcast_in_dim %a, dims = [1] : (tensor<{n}xf32>) -> tensor<{n}x{n}xf32>
  %1 = accy.transpose %0, dims = [1, 0] : (tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  %2 = accy.reduce max %1, dims = [1] : (tensor<{n}x{n}xf32>) -> tensor<{n}xf32>
  func.return %2 : tensor<{n}xf32>
}}"""
    accy.compile(program, threads=2)
    exe = accy.compile(program, threads=2)
    assert isinstance(exe.jit, mlir_bridge.LibraryModule)
    x = np.ones(n, np.float32)
    for _ in range(2):  # the record is taken by each call
        with pytest.raises(AccyMemoryError, match=r"@f could not allocate \d+ bytes"):
            exe["f"](x)


def test_an_export_exported_before_is_copied_from_the_cache(cache, tmp_path, monkeypatch):
    text = PROGRAM.format(bias=0.5)
    accy.export(text, tmp_path / "first", threads=1)
    (entry,) = _entries(cache)

    def no_compile(*args, **kwargs):
        raise AssertionError("an export found in the cache compiled again")

    monkeypatch.setattr(cpu, "export", no_compile)
    accy.export(accy.parse(text), tmp_path / "second", threads=1)  # the same module: a hit
    for name in sorted(p.name for p in (tmp_path / "first").iterdir()):
        assert (tmp_path / "second" / name).read_bytes() == (tmp_path / "first" / name).read_bytes()
    module = accy.runtime.load(tmp_path / "second")
    np.testing.assert_allclose(
        module.f(*ARGS)[0], np.tanh(ARGS[0] @ ARGS[1] + np.float32(0.5)), rtol=1e-5, atol=1e-5
    )
    module.close()
    with pytest.raises(AssertionError, match="compiled again"):  # another option: a miss
        accy.export(text, tmp_path / "third", threads=2)
    (entry / compile_cache.files(entry)[0].name).write_bytes(b"damaged")
    with pytest.raises(AssertionError, match="compiled again"):  # a damaged entry: a miss
        accy.export(text, tmp_path / "fourth", threads=1)
