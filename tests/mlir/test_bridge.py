"""accy.mlir_bridge against hand-written upstream MLIR (CPU JIT, PTX, CUDA host code).

Needs torch-mlir and numba-cuda-mlir (skipped only when they are missing) and, for
the ptxas checks, /usr/local/cuda/bin/ptxas (skipped when absent). No GPU needed.
"""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch_mlir.execution_engine", reason="torch-mlir not installed")
pytest.importorskip("numba_cuda_mlir._mlir.ir", reason="numba-cuda-mlir not installed")

from accy import mlir_bridge as mb
from accy.mlir_bridge import bindings

PTXAS = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
HAVE_PTXAS = Path(PTXAS).is_file()
HAVE_LIBDEVICE = mb.find_libdevice(required=False) is not None

ADD = """
func.func @add(%a: memref<1024xf32>, %b: memref<1024xf32>, %out: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1024 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] : memref<1024xf32>
    %y = memref.load %b[%i] : memref<1024xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %out[%i] : memref<1024xf32>
  }
  return
}
"""

# One i8 arena from memref.alloc, two f32 views into it, math.exp/tanh.
ARENA = """
func.func @expmul(%a: memref<16x64xf32>, %out: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %off1 = arith.constant 4096 : index
  %arena = memref.alloc() {alignment = 64 : i64} : memref<8192xi8>
  %t0 = memref.view %arena[%c0][] : memref<8192xi8> to memref<16x64xf32>
  %t1 = memref.view %arena[%off1][] : memref<8192xi8> to memref<16x64xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %x = memref.load %a[%i, %j] : memref<16x64xf32>
      %e = math.exp %x : f32
      memref.store %e, %t0[%i, %j] : memref<16x64xf32>
      %t = math.tanh %x : f32
      memref.store %t, %t1[%i, %j] : memref<16x64xf32>
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %p = memref.load %t0[%i, %j] : memref<16x64xf32>
      %q = memref.load %t1[%i, %j] : memref<16x64xf32>
      %r = arith.mulf %p, %q : f32
      memref.store %r, %out[%i, %j] : memref<16x64xf32>
    }
  }
  memref.dealloc %arena : memref<8192xi8>
  return
}
"""

# Vector loop with a libm-only function (erf), a reduction carried by scf.for,
# and a dynamic-size memref plus a scalar parameter.
VECTOR = """
func.func @vec(%a: memref<1024xf32>, %out: memref<1024xf32>, %s: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %n = arith.constant 1024 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c8 iter_args(%acc = %z) -> (f32) {
    %v = vector.load %a[%i] : memref<1024xf32>, vector<8xf32>
    %e = math.erf %v : vector<8xf32>
    %m = arith.maximumf %e, %v : vector<8xf32>
    vector.store %m, %out[%i] : memref<1024xf32>, vector<8xf32>
    %red = vector.reduction <add>, %v : vector<8xf32> into f32
    %acc2 = arith.addf %acc, %red : f32
    scf.yield %acc2 : f32
  }
  memref.store %r, %s[%c0] : memref<1xf32>
  return
}
func.func @scale(%a: memref<?xf64>, %k: f64, %out: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] : memref<?xf64>
    %y = arith.mulf %x, %k : f64
    memref.store %y, %out[%i] : memref<?xf64>
  }
  return
}
"""

KERNELS = """
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @expk(%a: memref<1024xf32>, %b: memref<1024xf32>) kernel {
      %bx = gpu.block_id x
      %bd = gpu.block_dim x
      %tx = gpu.thread_id x
      %t = arith.muli %bx, %bd : index
      %i = arith.addi %t, %tx : index
      %c = arith.constant 1024 : index
      %ok = arith.cmpi ult, %i, %c : index
      scf.if %ok {
        %v = memref.load %a[%i] : memref<1024xf32>
        %e = math.exp %v : f32
        memref.store %e, %b[%i] : memref<1024xf32>
      }
      gpu.return
    }
    gpu.func @tanhk(%a: memref<1024xf32>) kernel {
      %tx = gpu.thread_id x
      %v = memref.load %a[%tx] : memref<1024xf32>
      %e = math.tanh %v : f32
      memref.store %e, %a[%tx] : memref<1024xf32>
      gpu.return
    }
  }
  func.func @main(%a: memref<1024xf32>, %out: memref<1024xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %c4096 = arith.constant 4096 : index
    %arena = gpu.alloc () : memref<8192xi8>
    %da = memref.view %arena[%c0][] : memref<8192xi8> to memref<1024xf32>
    %db = memref.view %arena[%c4096][] : memref<8192xi8> to memref<1024xf32>
    gpu.memcpy %da, %a : memref<1024xf32>, memref<1024xf32>
    gpu.launch_func @kernels::@expk blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%da : memref<1024xf32>, %db : memref<1024xf32>)
    gpu.memcpy %out, %db : memref<1024xf32>, memref<1024xf32>
    gpu.dealloc %arena : memref<8192xi8>
    return
  }
}
"""


@pytest.fixture(scope="module")
def compiled_kernels() -> str:
    if not HAVE_LIBDEVICE:
        pytest.skip("libdevice.10.bc not found")
    return mb.compile_kernels_to_ptx(KERNELS, chip="sm_90", opt=3)


# ----------------------------------------------------------------------------- CPU


def test_cpu_add_out_param():
    jit = mb.JitModule(ADD)
    a = np.random.default_rng(0).random(1024, dtype=np.float32)
    b = np.random.default_rng(1).random(1024, dtype=np.float32)
    (out,) = jit.run("add", [a, b])
    np.testing.assert_array_equal(out, a + b)
    # explicit result specs and the raw invoke form agree
    (out2,) = jit.run("add", [a, b], [((1024,), np.float32)])
    np.testing.assert_array_equal(out2, a + b)
    out3 = np.zeros(1024, np.float32)
    jit.invoke("add", mb.memref_arg(a), mb.memref_arg(b), mb.memref_arg(out3))
    np.testing.assert_array_equal(out3, a + b)


def test_cpu_arena_views_and_math():
    jit = mb.JitModule(ARENA, opt_level=2)
    x = np.random.default_rng(2).standard_normal((16, 64)).astype(np.float32)
    (out,) = jit.run("expmul", [x])
    np.testing.assert_allclose(out, np.exp(x) * np.tanh(x), rtol=2e-6, atol=1e-7)


def test_cpu_vector_libm_dynamic_and_scalar():
    jit = mb.JitModule(VECTOR)
    x = np.random.default_rng(3).standard_normal(1024).astype(np.float32)
    out, s = jit.run("vec", [x])
    np.testing.assert_allclose(out, np.maximum(np.vectorize(math.erf)(x), x), atol=2e-6)
    np.testing.assert_allclose(s[0], x.sum(dtype=np.float64), rtol=1e-4, atol=1e-3)
    y = np.arange(7, dtype=np.float64)
    (z,) = jit.run("scale", [y, 2.5], [((7,), np.float64)])
    np.testing.assert_array_equal(z, y * 2.5)
    with pytest.raises(ValueError, match="result_specs"):
        jit.run("scale", [y, 2.5])


LIBCALLS = """
func.func @calls(%a: memref<1024xf32>, %out: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1024 : index
  memref.copy %a, %out : memref<1024xf32> to memref<1024xf32>
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %out[%i] : memref<1024xf32>
    %l = math.log %x : f32
    %s = math.sin %l : f32
    memref.store %s, %out[%i] : memref<1024xf32>
  }
  return
}
"""


def test_cpu_libcalls_after_the_nvptx_bindings():
    """The NVPTX bindings loaded first (a CUDA compile before a CPU one) must not break the
    host JIT's library calls (`logf`, `sinf`, `memcpy`): in a fresh process, as the order
    of loading decides."""
    script = f"""
import numpy as np
from accy import mlir_bridge as mb
mb.compile_kernels_to_ptx({KERNELS!r}, chip="sm_90", opt=3)
x = np.linspace(0.5, 4.0, 1024, dtype=np.float32)
(out,) = mb.JitModule({LIBCALLS!r}).run("calls", [x])
assert np.allclose(out, np.sin(np.log(x)), atol=1e-6), out[:4]
print("ok")
"""
    if not HAVE_LIBDEVICE:
        pytest.skip("libdevice.10.bc not found")
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


def test_lower_to_llvm_cpu_text():
    text = mb.lower_to_llvm(ADD, target="cpu")
    assert "llvm.func @add" in text and "llvm.func @_mlir_ciface_add" in text
    assert "scf." not in text and "memref." not in text


def test_signatures():
    sig = mb.function_signatures(VECTOR)
    assert sig["scale"][0] == mb.ArgSpec("memref<?xf64>", (None,), "float64")
    assert sig["scale"][1] == mb.ArgSpec("f64", None, "float64")


# --------------------------------------------------------------------------- errors


def test_verify_reports_mlir_diagnostics():
    mb.verify_upstream(ADD)
    with pytest.raises(mb.UpstreamMlirError) as e:
        mb.verify_upstream("func.func @f(%a: i32) -> f32 {\n  return %a : i32\n}")
    assert "error" in str(e.value) and "return" in str(e.value)
    with pytest.raises(mb.UpstreamMlirError, match="unregistered dialect"):
        mb.verify_upstream('func.func @f() {\n  "accy.add"() : () -> ()\n  return\n}')
    with pytest.raises(mb.UpstreamMlirError, match="expected"):
        mb.verify_upstream("func.func @f( {")


def test_uncompiled_gpu_module_is_a_clear_error():
    with pytest.raises(mb.UpstreamMlirError, match="compile_kernels_to_ptx"):
        mb.lower_to_llvm(KERNELS, target="cuda")


def test_missing_bindings_message(monkeypatch):
    monkeypatch.setitem(bindings._cache, "host", None)
    bindings._cache.pop("host")
    monkeypatch.setenv("ACCY_MLIR_HOST_BINDINGS", "accy_no_such_bindings")
    with pytest.raises(mb.MlirUnavailableError, match="pip install torch-mlir"):
        mb.lower_to_llvm(ADD)
    bindings._cache.pop("host", None)


# ---------------------------------------------------------------------------- kernels


def test_kernels_to_ptx_and_ptxas(compiled_kernels, tmp_path):
    assert "gpu.binary @kernels" in compiled_kernels
    assert "gpu.module" not in compiled_kernels
    assert "func.func @main" in compiled_kernels  # host code untouched
    ptx = mb.extract_ptx(compiled_kernels)
    assert set(ptx) == {"kernels", "kernels:sm_90"}
    src = ptx["kernels"]
    assert ".target sm_90" in src and ".entry expk" in src and ".entry tanhk" in src
    assert "__nv_" not in src  # libdevice linked in
    if not HAVE_PTXAS:
        pytest.skip("ptxas not found")
    f = tmp_path / "k.ptx"
    f.write_text(src)
    r = subprocess.run(
        [PTXAS, "-arch=sm_90", "--warning-as-error", str(f), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and not r.stderr.strip() and not r.stdout.strip(), r.stderr + r.stdout


def test_extract_ptx_unescapes():
    text = 'gpu.binary @b [#gpu.object<#nvvm.target<chip = "sm_80">, assembly = "a\\0Ab\\22c\\\\d\\09">]'
    assert mb.extract_ptx(text) == {"b": 'a\nb"c\\d\t', "b:sm_80": 'a\nb"c\\d\t'}


# ----------------------------------------------------------------------- CUDA host


def test_cuda_host_lowers(compiled_kernels):
    text = mb.lower_to_llvm(compiled_kernels, target="cuda")
    assert "gpu.binary @kernels" in text
    assert "gpu.launch_func" in text  # becomes mgpuLaunchKernel at translation
    for sym in (
        "mgpuMemAlloc",
        "mgpuMemcpy",
        "mgpuMemFree",
        "mgpuStreamCreate",
        "mgpuStreamSynchronize",
    ):
        assert f"llvm.func @{sym}" in text
    assert "func.func" not in text and "memref." not in text


class _FakeGpu:
    """Python stand-ins for the MLIR GPU runtime ABI over host memory."""

    VP = ctypes.c_void_p

    def __init__(self):
        self.calls: list[str] = []
        self.buffers: dict[int, np.ndarray] = {}
        self.ptx = b""
        VP = self.VP
        C = ctypes.CFUNCTYPE
        self.symbols = {
            "mgpuStreamCreate": C(VP)(self._log("mgpuStreamCreate", 0x51)),
            "mgpuStreamDestroy": C(None, VP)(self._log("mgpuStreamDestroy")),
            "mgpuStreamSynchronize": C(None, VP)(self._log("mgpuStreamSynchronize")),
            "mgpuMemAlloc": C(VP, ctypes.c_uint64, VP, ctypes.c_bool)(self.alloc),
            "mgpuMemFree": C(None, VP, VP)(self.free),
            "mgpuMemcpy": C(None, VP, VP, ctypes.c_size_t, VP)(self.memcpy),
            "mgpuModuleLoadJIT": C(VP, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t)(self.load),
            "mgpuModuleLoad": C(VP, ctypes.c_char_p, ctypes.c_size_t)(self.load),
            "mgpuModuleUnload": C(None, VP)(self._log("mgpuModuleUnload")),
            "mgpuModuleGetFunction": C(VP, VP, ctypes.c_char_p)(self.getfn),
            "mgpuLaunchKernel": C(
                None,
                VP,
                *[ctypes.c_ssize_t] * 6,
                ctypes.c_int32,
                VP,
                ctypes.POINTER(VP),
                ctypes.POINTER(VP),
                ctypes.c_size_t,
            )(self.launch),
        }

    def _log(self, name, ret=None):
        def f(*_):
            self.calls.append(name)
            return ret

        return f

    def alloc(self, size, stream, host_shared):
        buf = np.zeros(size, np.uint8)
        self.buffers[buf.ctypes.data] = buf
        self.calls.append(f"alloc {size}")
        return buf.ctypes.data

    def free(self, ptr, stream):
        self.buffers.pop(ptr)
        self.calls.append("free")

    def memcpy(self, dst, src, size, stream):
        ctypes.memmove(dst, src, size)
        self.calls.append(f"memcpy {size}")

    def load(self, data, *rest):
        self.ptx = data
        self.calls.append("load")
        return 0x11

    def getfn(self, module, name):
        self.calls.append(f"function {name.decode()}")
        return 0x22

    def launch(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra, nparams):
        self.calls.append(f"launch {gx}x{gy}x{gz} {bx}x{by}x{bz} args={nparams}")

        # expk(memref a, memref b): each memref is 5 params; #1 and #6 are the aligned ptrs
        def f32(i):
            addr = ctypes.cast(params[i], ctypes.POINTER(self.VP))[0]
            return np.ctypeslib.as_array(ctypes.cast(addr, ctypes.POINTER(ctypes.c_float)), (1024,))

        f32(6)[:] = np.exp(f32(1))


def test_cuda_host_jit_against_fake_runtime(compiled_kernels):
    fake = _FakeGpu()
    jit = mb.JitModule(compiled_kernels, target="cuda", symbols=fake.symbols)
    assert fake.calls == ["load"] and b".entry expk" in fake.ptx  # ctor loaded the PTX
    x = np.linspace(-3, 3, 1024, dtype=np.float32)
    (out,) = jit.run("main", [x])
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    assert fake.calls[1:] == [
        "mgpuStreamCreate",
        "alloc 8192",
        "memcpy 4096",
        "function expk",
        "launch 4x1x1 256x1x1 args=10",
        "memcpy 4096",
        "free",
        "mgpuStreamSynchronize",
        "mgpuStreamDestroy",
    ]
    assert not fake.buffers


def test_dump_objects(compiled_kernels, tmp_path):
    cpu = mb.dump_object(ADD, tmp_path / "add.o")
    assert cpu.stat().st_size > 0
    obj = mb.dump_object(compiled_kernels, tmp_path / "host.o", target="cuda")
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=True).stdout
        assert "U mgpuLaunchKernel" in syms and "U mgpuMemAlloc" in syms
        assert "__orc_init_func.LLVMDialectModule" in syms
        assert "_mlir_ciface_main" in syms


UNDEFINED_CALL = """
module {
  func.func private @accy_test_nothing_defines_this(f32) -> f32
  func.func @calls(%x: memref<4xf32>, %out: memref<4xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<4xf32>
    %r = func.call @accy_test_nothing_defines_this(%v) : (f32) -> f32
    memref.store %r, %out[%c0] : memref<4xf32>
    return
  }
}
"""


def test_a_function_calling_what_nothing_defines_names_the_symbol():
    # ORC only prints the missing symbol on stderr; the lookup error says it (an f64 ->
    # f16 truncation once called __truncdfhf2 and reported only "no function").
    jit = mb.JitModule(UNDEFINED_CALL)
    with pytest.raises(
        mb.UpstreamMlirError, match="no definition of accy_test_nothing_defines_this"
    ):
        jit.lookup("calls")
