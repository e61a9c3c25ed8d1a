"""The pass pipelines and fixed texts the bridge hands to MLIR and the linker.

CPU and CUDA host lowering to the LLVM dialect (`CPU_PIPELINE`, `cpu_pipeline` with
`CPU_PARALLEL_PASSES`, `CUDA_HOST_PIPELINE`), kernels to PTX (`KERNEL_PIPELINE`), the MLIR
GPU runtime symbols lowered host code may call (`MGPU_RUNTIME_SYMBOLS`) and the C stub
linked next to a dumped CUDA host object (`ORC_INIT_STUB_C`). Plain strings only: the
bindings parse a pipeline when it runs (`bindings._Session.run`), so this module imports
neither them nor anything of accy.
"""

from __future__ import annotations

from typing import Literal

Target = Literal["cpu", "cuda"]


#: CPU: memref/scf/affine/vector/math/arith/cf/func -> LLVM dialect.
#: Order matters: ``convert-math-to-libm`` scalarises vector math into
#: ``vector.extract/insert`` and so runs before ``convert-vector-to-llvm``;
#: ``convert-math-to-llvm`` runs first so exp/log/tanh/... become LLVM intrinsics and
#: only the rest (erf, atan2, ...) become libm calls (resolved from the process).
CPU_PIPELINE = (
    "builtin.module("
    "lower-affine, convert-vector-to-scf, convert-scf-to-cf, arith-expand, "
    "expand-strided-metadata, convert-math-to-llvm, convert-math-to-libm, "
    "convert-vector-to-llvm{enable-x86}, finalize-memref-to-llvm, convert-arith-to-llvm, "
    "convert-index-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, "
    "reconcile-unrealized-casts)"
)

#: CPU parallel loops, run in front of ``CPU_PIPELINE``: every ``scf.parallel`` is
#: split into blocks run as async tasks (``async-parallel-for``; ``{threads}`` sizes
#: the split, oversharded for balance), which become LLVM coroutines and calls to the
#: ``mlirAsyncRuntime*`` ABI (accy's libaccy_async_runtime.so provides it). Without
#: these passes ``convert-scf-to-cf`` runs each ``scf.parallel`` as plain loops.
CPU_PARALLEL_PASSES = (
    "async-parallel-for{{async-dispatch=true num-workers={threads} min-task-size=1}}, "
    "async-to-async-runtime, async-runtime-ref-counting, async-runtime-ref-counting-opt, "
    "convert-async-to-llvm, "
)


def cpu_pipeline(threads: int = 1) -> str:
    """``CPU_PIPELINE``, with ``CPU_PARALLEL_PASSES`` for `threads` in front when
    `threads` > 1."""
    if threads <= 1:
        return CPU_PIPELINE
    head = "builtin.module("
    return head + CPU_PARALLEL_PASSES.format(threads=threads) + CPU_PIPELINE[len(head) :]


#: CUDA host code (gpu.alloc/gpu.memcpy/gpu.launch_func/gpu.dealloc in host
#: functions, kernels already compiled to ``gpu.binary``). Synchronous gpu ops need
#: ``gpu-async-region`` first; ``gpu-to-llvm`` must see memref types, so it runs
#: before ``finalize-memref-to-llvm``. ``gpu.binary``/``gpu.launch_func`` survive and
#: are turned into mgpuModuleLoad*/mgpuLaunchKernel calls by LLVM translation.
CUDA_HOST_PIPELINE = (
    "builtin.module("
    "func.func(gpu-async-region), "
    "lower-affine, convert-vector-to-scf, convert-scf-to-cf, arith-expand, "
    "expand-strided-metadata, gpu-to-llvm, convert-math-to-llvm, convert-math-to-libm, "
    "convert-vector-to-llvm, finalize-memref-to-llvm, convert-arith-to-llvm, "
    "convert-index-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, "
    "reconcile-unrealized-casts)"
)

#: Kernels (numba-cuda-mlir bindings). ``{target}`` is filled with the
#: nvvm-attach-target options. scf/affine inside gpu.func must be lowered before
#: convert-gpu-to-nvvm (otherwise translation fails on scf.if).
KERNEL_PIPELINE = (
    "builtin.module("
    "nvvm-attach-target{{{target}}}, "
    "gpu.module(lower-affine, convert-scf-to-cf, expand-strided-metadata, "
    "convert-gpu-to-nvvm, reconcile-unrealized-casts), "
    "gpu-module-to-binary{{format=isa}})"
)

#: The MLIR GPU runtime ABI (CudaRuntimeWrappers) functions that lowered host code or
#: its LLVM translation may call. ``dump_object`` registers placeholders for them.
MGPU_RUNTIME_SYMBOLS: tuple[str, ...] = (
    "mgpuModuleLoad",
    "mgpuModuleLoadJIT",
    "mgpuModuleUnload",
    "mgpuModuleGetFunction",
    "mgpuLaunchKernel",
    "mgpuLaunchClusterKernel",
    "mgpuStreamCreate",
    "mgpuStreamDestroy",
    "mgpuStreamSynchronize",
    "mgpuStreamWaitEvent",
    "mgpuEventCreate",
    "mgpuEventDestroy",
    "mgpuEventSynchronize",
    "mgpuEventRecord",
    "mgpuMemAlloc",
    "mgpuMemFree",
    "mgpuMemcpy",
    "mgpuMemset16",
    "mgpuMemset32",
    "mgpuMemHostRegister",
    "mgpuMemHostRegisterMemRef",
    "mgpuMemHostUnregister",
    "mgpuMemHostUnregisterMemRef",
    "mgpuSetDefaultDevice",
)

#: C source to link next to a dumped CUDA host object (see ``dump_object``): the
#: object has no ``.init_array``; its init/deinit functions load/unload the embedded
#: kernels and must be called by the shared library's constructor/destructor.
ORC_INIT_STUB_C = r"""
extern void accy_orc_init(void) __asm__("__orc_init_func.LLVMDialectModule");
extern void accy_orc_deinit(void) __asm__("__orc_deinit_func.LLVMDialectModule");
__attribute__((constructor)) static void accy_module_ctor(void) { accy_orc_init(); }
__attribute__((destructor)) static void accy_module_dtor(void) { accy_orc_deinit(); }
"""
