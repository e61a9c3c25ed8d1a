"""The native runtime (libaccy_runtime.so) over the fake CUDA driver (libaccy_fake_cuda.so).

Each scenario runs in its own Python subprocess: the runtime binds its driver
once per process (ACCY_CUDA_DRIVER is read at the first mgpu call), and a fresh
process gives every scenario a fresh runtime and a fresh fake driver. The
scenario calls the mgpu* functions through ctypes, as MLIR-generated host code
would, then reads the fake driver's call log and error log. Loading the fake
with ctypes by the same path that the runtime dlopens yields the same library
instance, so the scenario sees what the runtime did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from accy.runtime import fake_driver_library_path, libraries, runtime_library_path

# Defines `runtime`, `fake` (ctypes libraries with typed functions) and helpers;
# each scenario's code runs after it and prints one JSON object.
HARNESS = r"""
import ctypes, json, sys
from ctypes import (POINTER, c_bool, c_char_p, c_int, c_int32, c_int64, c_size_t,
                    c_ssize_t, c_uint, c_uint64, c_ulong, c_void_p)

RUNTIME_PATH, FAKE_PATH = sys.argv[1], sys.argv[2]
runtime = ctypes.CDLL(RUNTIME_PATH)
fake = ctypes.CDLL(FAKE_PATH) if FAKE_PATH else None

def declare(library, name, result, *arguments):
    function = getattr(library, name)
    function.restype = result
    function.argtypes = list(arguments)

declare(runtime, "mgpuModuleLoad", c_void_p, c_void_p, c_size_t)
declare(runtime, "mgpuModuleLoadJIT", c_void_p, c_void_p, c_int)
declare(runtime, "mgpuModuleUnload", None, c_void_p)
declare(runtime, "mgpuModuleGetFunction", c_void_p, c_void_p, c_char_p)
declare(runtime, "mgpuLaunchKernel", None, c_void_p, c_ssize_t, c_ssize_t, c_ssize_t,
        c_ssize_t, c_ssize_t, c_ssize_t, c_int32, c_void_p, POINTER(c_void_p),
        POINTER(c_void_p), c_size_t)
declare(runtime, "mgpuStreamCreate", c_void_p)
declare(runtime, "mgpuStreamDestroy", None, c_void_p)
declare(runtime, "mgpuStreamSynchronize", None, c_void_p)
declare(runtime, "mgpuStreamWaitEvent", None, c_void_p, c_void_p)
declare(runtime, "mgpuEventCreate", c_void_p)
declare(runtime, "mgpuEventDestroy", None, c_void_p)
declare(runtime, "mgpuEventSynchronize", None, c_void_p)
declare(runtime, "mgpuEventRecord", None, c_void_p, c_void_p)
declare(runtime, "mgpuMemAlloc", c_void_p, c_uint64, c_void_p, c_bool)
declare(runtime, "mgpuMemFree", None, c_void_p, c_void_p)
declare(runtime, "mgpuMemcpy", None, c_void_p, c_void_p, c_size_t, c_void_p)
declare(runtime, "mgpuMemset32", None, c_void_p, c_uint, c_size_t, c_void_p)
declare(runtime, "mgpuMemset16", None, c_void_p, ctypes.c_ushort, c_size_t, c_void_p)
declare(runtime, "mgpuMemHostRegisterMemRef", None, c_int64, c_void_p, c_int64)
declare(runtime, "mgpuMemHostUnregisterMemRef", None, c_int64, c_void_p, c_int64)
declare(runtime, "mgpuSetDefaultDevice", None, c_int32)
declare(runtime, "accy_runtime_last_error", c_char_p)
declare(runtime, "accy_runtime_error_count", c_ulong)
declare(runtime, "accy_runtime_clear_error", None)
declare(runtime, "accy_runtime_device_sm_count", c_int)
if fake is not None:
    declare(fake, "fake_cuda_event_count", c_int)
    declare(fake, "fake_cuda_event", c_int, c_int, c_char_p, c_size_t)
    declare(fake, "fake_cuda_error_count", c_int)
    declare(fake, "fake_cuda_error", c_int, c_int, c_char_p, c_size_t)
    declare(fake, "fake_cuda_fail_next", None, c_char_p, c_int)
    declare(fake, "fake_cuda_set_device_memory_limit", None, ctypes.c_ulonglong)
    declare(fake, "fake_cuda_check_leaks", c_int)
    declare(fake, "fake_cuda_live_device_bytes", ctypes.c_ulonglong)
    declare(fake, "fake_cuda_reset", None)

def read_log(count, read):
    lines = []
    for index in range(count()):
        length = read(index, None, 0)
        buffer = ctypes.create_string_buffer(length + 1)
        read(index, buffer, len(buffer))
        lines.append(buffer.value.decode())
    return lines

def calls():
    return read_log(fake.fake_cuda_event_count, fake.fake_cuda_event)

def misuse():
    return read_log(fake.fake_cuda_error_count, fake.fake_cuda_error)

def last_error():
    message = runtime.accy_runtime_last_error()
    return message.decode() if message is not None else None

PTX = b'''
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(
    .param .u64 k_param_0,
    .param .u32 k_param_1
)
{
    ret;
}
'''

def load_kernel(name=b"k"):
    module = runtime.mgpuModuleLoad(PTX, len(PTX) + 1)
    return module, runtime.mgpuModuleGetFunction(module, name)

def launch(function, pointer, count, smem=0, stream=None, block=256):
    pointer_argument = c_void_p(pointer)
    count_argument = ctypes.c_uint32(count)
    params = (c_void_p * 2)(ctypes.addressof(pointer_argument),
                            ctypes.addressof(count_argument))
    runtime.mgpuLaunchKernel(function, 1, 1, 1, block, 1, 1, smem, stream, params,
                             None, 2)

def emit(**result):
    print(json.dumps(result))
"""


def run_scenario(
    body: str,
    *,
    driver: str | None = "fake",
    env: dict[str, str] | None = None,
    load_fake: bool = True,
) -> tuple[dict, str]:
    """Runs HARNESS + body in a fresh interpreter; returns its JSON result and its stderr."""
    fake_path = str(fake_driver_library_path())
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACCY_CUDA_DRIVER", "ACCY_FAKE_CUDA"))
    }
    environment["ACCY_CUDA_DRIVER"] = fake_path if driver == "fake" else driver
    environment.update(env or {})
    process = subprocess.run(
        [
            sys.executable,
            "-c",
            HARNESS + textwrap.dedent(body),
            str(runtime_library_path()),
            fake_path if load_fake else "",
        ],
        env=environment,
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert process.returncode == 0, process.stderr
    return json.loads(process.stdout.strip().splitlines()[-1]), process.stderr


def test_libraries_are_found():
    assert runtime_library_path().name == "libaccy_runtime.so"
    assert fake_driver_library_path().name == "libaccy_fake_cuda.so"
    assert runtime_library_path().parent == fake_driver_library_path().parent


def test_missing_library_error_says_where_it_looked_and_how_to_build():
    with pytest.raises(libraries.NativeLibraryNotFoundError) as caught:
        libraries._find("libaccy_not_built.so")
    message = str(caught.value)
    assert "libaccy_not_built.so" in message
    assert "pip install -e ." in message
    assert str(runtime_library_path().parent) in message


def test_alloc_copy_launch_copy_free_round_trip():
    result, stderr = run_scenario("""
        sm_count = runtime.accy_runtime_device_sm_count()
        stream = runtime.mgpuStreamCreate()
        device = runtime.mgpuMemAlloc(256, stream, False)
        host_in = (ctypes.c_float * 12)(*[float(i) + 0.5 for i in range(12)])
        runtime.mgpuMemcpy(device, ctypes.addressof(host_in), 48, stream)
        module, function = load_kernel()
        launch(function, device, 12, stream=stream)
        host_out = (ctypes.c_float * 12)()
        runtime.mgpuMemcpy(ctypes.addressof(host_out), device, 48, stream)
        runtime.mgpuStreamSynchronize(stream)
        runtime.mgpuMemFree(device, stream)
        runtime.mgpuModuleUnload(module)
        runtime.mgpuStreamDestroy(stream)
        emit(sm_count=sm_count, device=hex(device), out=list(host_out), error=last_error(),
             leaks=fake.fake_cuda_check_leaks(), misuse=misuse(), calls=calls(),
             host_in=hex(ctypes.addressof(host_in)), host_out=hex(ctypes.addressof(host_out)))
    """)
    assert result["error"] is None, result["error"]
    assert stderr == ""
    assert result["sm_count"] == 132
    assert result["out"] == [float(i) + 0.5 for i in range(12)]
    assert result["leaks"] == 0 and result["misuse"] == []

    device, host_in, host_out = result["device"], result["host_in"], result["host_out"]
    calls = [
        line
        for line in result["calls"]
        if not line.startswith(("device_", "primary_context", "context_", "init"))
    ]
    assert calls[0].startswith("stream_create stream=")
    stream = calls[0].split("stream=")[1].split()[0]
    assert calls[1] == f"alloc ptr={device} bytes=256"
    assert calls[2] == f"memcpy_htod dst={device} src={host_in} bytes=48"
    assert calls[3].startswith("module_load module=") and "format=ptx" in calls[3]
    assert calls[3].endswith("kernels=1")
    assert calls[4].endswith("name=k")
    assert calls[5] == (
        f"launch name=k grid=1,1,1 block=256,1,1 smem=0 stream={stream} params=2 args={device},0xc"
    )
    assert calls[6] == f"memcpy_dtoh dst={host_out} src={device} bytes=48"
    assert calls[7] == f"stream_synchronize stream={stream}"
    assert calls[8] == f"free ptr={device}"
    assert calls[9].startswith("module_unload")
    assert calls[10] == f"stream_destroy stream={stream}"
    assert len(calls) == 11
    # The runtime initialized the driver once and bound the primary context.
    assert result["calls"][0] == "init"
    assert sum(line.startswith("primary_context_retain") for line in result["calls"]) == 1


def test_jit_memset_managed_memory_and_events():
    result, _ = run_scenario("""
        module = runtime.mgpuModuleLoadJIT(PTX, 3)
        function = runtime.mgpuModuleGetFunction(module, b"k")
        device = runtime.mgpuMemAlloc(16, None, False)
        runtime.mgpuMemset32(device, 0x01020304, 4, None)
        words = (ctypes.c_uint32 * 4)()
        runtime.mgpuMemcpy(ctypes.addressof(words), device, 16, None)
        runtime.mgpuMemset16(device, 0xBEEF, 2, None)
        halves = (ctypes.c_uint16 * 2)()
        runtime.mgpuMemcpy(ctypes.addressof(halves), device, 4, None)
        shared = runtime.mgpuMemAlloc(8, None, True)
        ctypes.memset(shared, 7, 8)      # managed memory is reachable from the host
        seen = (ctypes.c_uint8 * 8)()
        runtime.mgpuMemcpy(ctypes.addressof(seen), shared, 8, None)
        first, second = runtime.mgpuStreamCreate(), runtime.mgpuStreamCreate()
        event = runtime.mgpuEventCreate()
        runtime.mgpuEventRecord(event, first)
        runtime.mgpuStreamWaitEvent(second, event)
        runtime.mgpuEventSynchronize(event)
        runtime.mgpuEventDestroy(event)
        for stream in (first, second):
            runtime.mgpuStreamDestroy(stream)
        for pointer in (device, shared):
            runtime.mgpuMemFree(pointer, None)
        runtime.mgpuModuleUnload(module)
        emit(words=list(words), halves=list(halves), seen=list(seen), error=last_error(),
             leaks=fake.fake_cuda_check_leaks(), calls=calls())
    """)
    assert result["error"] is None, result["error"]
    assert result["words"] == [0x01020304] * 4
    assert result["halves"] == [0xBEEF, 0xBEEF]
    assert result["seen"] == [7] * 8
    assert result["leaks"] == 0
    calls = result["calls"]
    assert any(line.startswith("module_load_jit") and line.endswith("opt=3") for line in calls)
    assert any(
        line.startswith("memset32") and line.endswith("count=4 value=0x1020304") for line in calls
    )
    assert any(line.startswith("alloc_managed") and line.endswith("bytes=8") for line in calls)
    for prefix in (
        "event_create",
        "event_record",
        "stream_wait_event",
        "event_synchronize",
        "event_destroy",
    ):
        assert any(line.startswith(prefix) for line in calls), prefix


def test_streams_on_other_threads_get_the_primary_context():
    result, _ = run_scenario("""
        import threading
        pointers = []
        def work():
            pointers.append(runtime.mgpuMemAlloc(64, None, False))
        for _ in range(3):
            thread = threading.Thread(target=work)
            thread.start(); thread.join()
        for pointer in pointers:
            runtime.mgpuMemFree(pointer, None)
        emit(error=last_error(), misuse=misuse(), calls=calls(), pointers=pointers)
    """)
    assert result["error"] is None and result["misuse"] == []
    assert all(result["pointers"])
    # One context switch per thread that used the runtime (3 workers + main).
    assert sum(line.startswith("context_set_current") for line in result["calls"]) == 4
    assert sum(line.startswith("primary_context_retain") for line in result["calls"]) == 1


def test_large_dynamic_shared_memory_is_opted_into():
    result, _ = run_scenario("""
        module, function = load_kernel()
        device = runtime.mgpuMemAlloc(64, None, False)
        launch(function, device, 1, smem=100 * 1024)
        fine = last_error()
        launch(function, device, 1, smem=300 * 1024)
        too_much = last_error()
        runtime.mgpuMemFree(device, None)
        runtime.mgpuModuleUnload(module)
        emit(fine=fine, too_much=too_much, calls=calls())
    """)
    assert result["fine"] is None
    assert any(line.endswith("attribute=8 value=102400") for line in result["calls"])
    assert result["too_much"].startswith(
        "accy runtime: cuFuncSetAttribute(max dynamic shared memory = 307200 bytes) failed: "
        "CUDA_ERROR_INVALID_VALUE: invalid argument"
    )


def test_missing_driver_names_the_library_it_tried():
    result, stderr = run_scenario(
        """
        pointer = runtime.mgpuMemAlloc(64, None, False)
        first = last_error()
        runtime.accy_runtime_clear_error()
        runtime.mgpuStreamCreate()
        again = last_error()
        emit(pointer=pointer, first=first, again=again, sm_count=runtime.accy_runtime_device_sm_count())
    """,
        driver="/nonexistent/libcuda.so.1",
        load_fake=False,
    )
    assert result["pointer"] is None
    assert result["first"].startswith(
        "accy runtime: cannot load the CUDA driver library '/nonexistent/libcuda.so.1' "
        "(set ACCY_CUDA_DRIVER"
    )
    assert "No such file or directory" in result["first"]  # dlerror()'s reason
    assert result["again"] == result["first"]  # recorded again on later calls
    assert result["sm_count"] == -1
    assert stderr.count("cannot load the CUDA driver library") == 1  # printed once


def test_driver_without_an_entry_point_is_named():
    result, _ = run_scenario(
        """
        runtime.mgpuStreamCreate()
        emit(error=last_error())
    """,
        driver=str(runtime_library_path()),
        load_fake=False,
    )
    assert result["error"] == (
        f"accy runtime: the CUDA driver library '{runtime_library_path()}' does not export cuInit"
    )


def test_injected_driver_failure_names_call_error_and_description():
    result, stderr = run_scenario("""
        device = runtime.mgpuMemAlloc(64, None, False)
        host = (ctypes.c_uint8 * 48)()
        fake.fake_cuda_fail_next(b"cuMemcpyAsync", 1)
        runtime.mgpuMemcpy(device, ctypes.addressof(host), 48, None)
        first = last_error()
        fake.fake_cuda_fail_next(b"cuStreamCreate", 999)
        stream = runtime.mgpuStreamCreate()
        count = runtime.accy_runtime_error_count()
        kept = last_error()
        runtime.accy_runtime_clear_error()
        cleared = last_error()
        runtime.mgpuMemcpy(device, ctypes.addressof(host), 48, None)   # succeeds again
        runtime.mgpuMemFree(device, None)
        emit(device=hex(device), host=hex(ctypes.addressof(host)), first=first, kept=kept,
             count=count, stream=stream, cleared=cleared, after=last_error(), calls=calls())
    """)
    assert result["first"] == (
        f"accy runtime: cuMemcpyAsync(dst={result['device']}, src={result['host']}, 48 bytes) "
        "failed: CUDA_ERROR_INVALID_VALUE: invalid argument"
    )
    assert result["stream"] is None
    assert result["count"] == 2
    assert result["kept"] == result["first"]  # the first failure is kept
    assert result["cleared"] is None and result["after"] is None
    assert "cuStreamCreate failed: CUDA_ERROR_UNKNOWN: unknown error" in stderr
    assert "fail call=cuMemcpyAsync error=CUDA_ERROR_INVALID_VALUE" in result["calls"]


def test_driver_initialization_failure_from_the_environment():
    result, _ = run_scenario(
        """
        emit(pointer=runtime.mgpuMemAlloc(64, None, False), error=last_error())
    """,
        env={"ACCY_FAKE_CUDA_FAIL": "cuInit=100"},
    )
    assert result["pointer"] is None
    assert result["error"].startswith("accy runtime: cannot initialize CUDA device 0 with '")
    assert result["error"].endswith("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")


def test_jit_failure_includes_the_jit_log():
    result, _ = run_scenario("""
        module = runtime.mgpuModuleLoadJIT(b"this is not PTX", 2)
        emit(module=module, error=last_error())
    """)
    assert result["module"] is None
    assert result["error"].startswith(
        "accy runtime: cuModuleLoadDataEx (PTX JIT at -O2) failed: "
        "CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid\nJIT log:\nfake CUDA driver:"
    )


def test_unknown_kernel_name_is_reported():
    result, _ = run_scenario("""
        module, function = load_kernel(b"accy_kernel_7")
        runtime.mgpuModuleUnload(module)
        emit(function=function, error=last_error())
    """)
    assert result["function"] is None
    assert result["error"] == (
        'accy runtime: cuModuleGetFunction("accy_kernel_7") failed: '
        "CUDA_ERROR_NOT_FOUND: named symbol not found"
    )


@pytest.mark.parametrize("how", ["function", "environment"])
def test_out_of_memory_names_the_requested_bytes(how):
    setup = "fake.fake_cuda_set_device_memory_limit(1 << 20)" if how == "function" else ""
    result, _ = run_scenario(
        f"""
        {setup}
        kept = runtime.mgpuMemAlloc(1 << 19, None, False)
        refused = runtime.mgpuMemAlloc(3 << 18, None, False)
        error = last_error()
        runtime.mgpuMemFree(kept, None)
        emit(kept=kept, refused=refused, error=error, live=fake.fake_cuda_live_device_bytes())
    """,
        env={"ACCY_FAKE_CUDA_MEMORY_LIMIT": str(1 << 20)} if how == "environment" else None,
    )
    assert result["kept"] and result["refused"] is None
    assert result["error"] == (
        "accy runtime: cannot allocate 786432 bytes of device memory: "
        "CUDA_ERROR_OUT_OF_MEMORY: out of memory (cuMemAlloc_v2)"
    )
    assert result["live"] == 0


def test_fake_driver_catches_use_after_free_double_free_and_overruns():
    result, _ = run_scenario("""
        module, function = load_kernel()
        device = runtime.mgpuMemAlloc(256, None, False)
        host = (ctypes.c_uint8 * 512)()
        runtime.mgpuMemcpy(device, ctypes.addressof(host), 300, None)  # past the end
        overrun = last_error(); runtime.accy_runtime_clear_error()
        runtime.mgpuMemFree(device, None)
        runtime.mgpuMemcpy(device, ctypes.addressof(host), 16, None)   # after free
        after_free = last_error(); runtime.accy_runtime_clear_error()
        launch(function, device, 4)                                  # kernel argument freed
        launch_error = last_error(); runtime.accy_runtime_clear_error()
        runtime.mgpuMemFree(device, None)                            # double free
        double_free = last_error(); runtime.accy_runtime_clear_error()
        runtime.mgpuMemset32(device + (1 << 20), 0, 4, None)         # never allocated
        never = last_error()
        runtime.mgpuModuleUnload(module)
        emit(device=hex(device), overrun=overrun, after_free=after_free,
             launch_error=launch_error, double_free=double_free, never=never, misuse=misuse())
    """)
    device = result["device"]
    misuse = result["misuse"]
    assert misuse[0] == (
        f"memcpy of 300 bytes: destination {device} runs past the end of "
        f"allocation {device} of 256 bytes"
    )
    assert misuse[1].startswith(
        f"memcpy of 16 bytes: destination {device} is in freed device "
        f"memory (allocation {device} of 256 bytes, freed by call #"
    )
    assert misuse[2].startswith(f"launch k: argument #0 ({device}) is in freed device memory")
    assert misuse[3].startswith(f"double free of device memory {device} (256 bytes")
    assert misuse[4].startswith("memset32 of 4 words: destination ")
    assert misuse[4].endswith("is device memory that was never allocated")
    assert len(misuse) == 5
    assert "cuMemcpyAsync" in result["overrun"] and "CUDA_ERROR_INVALID_VALUE" in result["overrun"]
    assert "CUDA_ERROR_INVALID_VALUE" in result["after_free"]
    assert (
        "cuLaunchKernel(grid=1,1,1 block=256,1,1) failed: CUDA_ERROR_ILLEGAL_ADDRESS"
        in (result["launch_error"])
    )
    assert f"cuMemFree_v2({device}) failed: CUDA_ERROR_INVALID_VALUE" in result["double_free"]
    assert "cuMemsetD32Async" in result["never"]


def test_fake_driver_reports_leaks_and_resets():
    result, _ = run_scenario("""
        device = runtime.mgpuMemAlloc(64, None, False)
        stream = runtime.mgpuStreamCreate()
        leaks = fake.fake_cuda_check_leaks()
        found = misuse()
        fake.fake_cuda_reset()
        emit(device=hex(device), leaks=leaks, found=found, after_reset=fake.fake_cuda_check_leaks(),
             calls_after_reset=calls(), usable=bool(runtime.mgpuMemAlloc(8, None, False)),
             error=last_error())
    """)
    assert result["leaks"] == 2
    assert result["found"][0].startswith(
        f"leak: device memory {result['device']} of 64 bytes (allocated by call #"
    )
    assert result["found"][1].startswith("leak: stream ")
    assert result["after_reset"] == 0 and result["calls_after_reset"] == []
    assert result["usable"] and result["error"] is None  # the runtime survives a reset


def test_host_register_memref_and_launch_validation():
    result, _ = run_scenario("""
        class MemRef2D(ctypes.Structure):
            _fields_ = [("allocated", c_void_p), ("aligned", c_void_p), ("offset", c_int64),
                        ("sizes", c_int64 * 2), ("strides", c_int64 * 2)]
        data = (ctypes.c_float * 12)()
        dense = MemRef2D(ctypes.addressof(data), ctypes.addressof(data), 0, (3, 4), (4, 1))
        runtime.mgpuMemHostRegisterMemRef(2, ctypes.byref(dense), 4)
        registered = last_error()
        runtime.mgpuMemHostUnregisterMemRef(2, ctypes.byref(dense), 4)
        strided = MemRef2D(ctypes.addressof(data), ctypes.addressof(data), 0, (3, 2), (4, 2))
        runtime.mgpuMemHostRegisterMemRef(2, ctypes.byref(strided), 4)
        strided_error = last_error(); runtime.accy_runtime_clear_error()
        module, function = load_kernel()
        device = runtime.mgpuMemAlloc(64, None, False)
        launch(function, device, 1, block=2048)
        block_error = last_error()
        runtime.mgpuMemFree(device, None)
        runtime.mgpuModuleUnload(module)
        emit(registered=registered, strided_error=strided_error, block_error=block_error,
             data=hex(ctypes.addressof(data)), calls=calls(), leaks=fake.fake_cuda_check_leaks())
    """)
    assert result["registered"] is None
    assert f"host_register ptr={result['data']} bytes=48 flags=0" in result["calls"]
    assert f"host_unregister ptr={result['data']}" in result["calls"]
    assert result["strided_error"] == (
        "accy runtime: mgpuMemHostRegisterMemRef: only densely packed memrefs can be "
        "registered; dimension 1 has stride 2, not 1"
    )
    assert result["block_error"].startswith(
        "accy runtime: cuLaunchKernel(grid=1,1,1 block=2048,1,1) failed: CUDA_ERROR_INVALID_VALUE"
    )
    assert result["leaks"] == 0


PTXAS = "/usr/local/cuda/bin/ptxas"


@pytest.mark.skipif(not os.access(PTXAS, os.X_OK), reason="needs ptxas (CUDA toolkit)")
def test_cubin_module_size_comes_from_its_elf_header(tmp_path):
    ptx = tmp_path / "k.ptx"
    cubin = tmp_path / "k.cubin"
    ptx.write_text(
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry k(.param .u64 k_param_0)\n{\n    ret;\n}\n"
    )
    subprocess.run([PTXAS, "-arch=sm_90", str(ptx), "-o", str(cubin)], check=True)
    result, _ = run_scenario(f"""
        image = open({str(cubin)!r}, "rb").read()
        module = runtime.mgpuModuleLoad(image, len(image))
        function = runtime.mgpuModuleGetFunction(module, b"k")
        runtime.mgpuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, None, None, None, 0)
        runtime.mgpuModuleUnload(module)
        emit(error=last_error(), calls=calls())
    """)
    assert result["error"] is None
    assert any(
        line.startswith("module_load")
        and line.endswith(f"format=cubin bytes={cubin.stat().st_size} kernels=0")
        for line in result["calls"]
    )
    # A cubin's parameter layout is not parsed: the launch is recorded without arguments.
    assert any(
        line.startswith("launch name=k ") and line.endswith("params=?") for line in result["calls"]
    )


def test_device_sm_count_reads_the_driver_and_is_none_without_one(tmp_path):
    """`accy.runtime.device_sm_count` asks the driver (the fake one reports an H200's
    132 multiprocessors); without a driver it is None."""
    code = "from accy.runtime import device_sm_count; print(device_sm_count())"
    for driver, expected in ((str(fake_driver_library_path()), "132"), ("/nonexistent.so", "None")):
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            check=False,
            text=True,
            env={**os.environ, "ACCY_CUDA_DRIVER": driver},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected
