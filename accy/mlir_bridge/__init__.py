"""The one package of accy that imports the upstream MLIR Python bindings.

Everything else in accy produces upstream MLIR *text* (func/arith/math/memref/scf/
vector/gpu/llvm) and goes through the small API below. The bindings are imported
lazily, inside functions, so ``import accy`` works without them.

Two PyPI distributions supply the bindings (see DESIGN.md, "Toolchain facts"):

* host code: ``torch-mlir`` (module ``torch_mlir``): parse/verify, CPU and CUDA host
  lowering to the LLVM dialect, the ExecutionEngine (JIT) and object dumps;
* kernels: ``numba-cuda-mlir`` (module ``numba_cuda_mlir._mlir``): the NVPTX backend,
  ``gpu.module`` -> ``gpu.binary`` holding PTX.

Both load in one Python process (numba-cuda-mlir preloads its LLVM with
``RTLD_DEEPBIND``), host bindings first (see ``bindings._nvptx``), so no subprocess is
needed. ``ACCY_MLIR_HOST_BINDINGS`` and ``ACCY_MLIR_NVPTX_BINDINGS`` name another package
(e.g. a real upstream ``mlir``) whose ``ir``/``passmanager`` (and ``execution_engine``
for the host) to use instead.

Modules (each imports only those above it; none imports the bindings at module level)
-------------------------------------------------------------------------------------
``errors``       the errors below;
``pipelines``    the pass pipelines, ``MGPU_RUNTIME_SYMBOLS``, ``ORC_INIT_STUB_C``;
``bindings``     loading the bindings, the diagnostics-collecting session;
``lowering``     ``verify_upstream``, ``lower_to_llvm``;
``ptx``          ``compile_kernels_to_ptx``, ``extract_ptx``, ``find_libdevice``;
``descriptors``  ``memref_descriptor``, ``memref_arg``, ``function_signatures``;
``jit``          ``JitModule``, ``LibraryModule`` (its code linked and loaded again: a
                 compile cache hit), ``PreparedCall``, ``dump_object``;
``stablehlo``    ``parse_stablehlo``, ``eval_stablehlo`` and the ``Upstream*`` tree;
``torch_export`` ``stablehlo_of_exported_program`` (torch-mlir's FX importer, for
                 ``accy.torch``);
``cli``          ``main``, the command line below (``__main__`` runs it).

Public API
----------
``verify_upstream``, ``lower_to_llvm``, ``compile_kernels_to_ptx``, ``extract_ptx``,
``find_libdevice``, ``JitModule``, ``dump_object``, ``memref_descriptor``,
``memref_arg``, ``function_signatures``, the pipeline constants, the errors
``MlirUnavailableError``, ``UpstreamMlirError``, ``LibdeviceNotFoundError``;
``parse_stablehlo`` (StableHLO text -> a plain-Python ``UpstreamOp`` tree, for
``accy.stablehlo``) and ``UpstreamParseError``. This package re-exports them (and the
other public names of its modules); private helpers are reached in their modules.

Command line (debugging aid)::

    python -m accy.mlir_bridge verify FILE
    python -m accy.mlir_bridge lower FILE [--target cpu|cuda]
    python -m accy.mlir_bridge ptx FILE [--chip sm_90] [--opt 3] [--extract]
"""

from __future__ import annotations

from accy.mlir_bridge.cli import main
from accy.mlir_bridge.descriptors import (
    ArgSpec,
    function_signatures,
    memref_arg,
    memref_descriptor,
)
from accy.mlir_bridge.errors import (
    LibdeviceNotFoundError,
    MlirUnavailableError,
    UpstreamMlirError,
    UpstreamParseError,
)
from accy.mlir_bridge.jit import (
    ALLOCATION_FAILED,
    CompiledCode,
    JitModule,
    LibraryModule,
    PreparedCall,
    check_allocation,
    data_address,
    dump_object,
)
from accy.mlir_bridge.lowering import lower_to_llvm, verify_upstream
from accy.mlir_bridge.pipelines import (
    CPU_PARALLEL_PASSES,
    CPU_PIPELINE,
    CUDA_HOST_PIPELINE,
    KERNEL_PIPELINE,
    MGPU_RUNTIME_SYMBOLS,
    ORC_INIT_STUB_C,
    Target,
    cpu_pipeline,
)
from accy.mlir_bridge.ptx import compile_kernels_to_ptx, extract_ptx, find_libdevice
from accy.mlir_bridge.stablehlo import (
    CHLO_EXPANDED_BY_STABLEHLO,
    CHLO_LEGALIZATION,
    HIDDEN_CHLO,
    MAX_DECODED_ELEMENTS,
    UpstreamBlock,
    UpstreamEnum,
    UpstreamOp,
    UpstreamOpaque,
    UpstreamType,
    UpstreamValue,
    dialect_resources,
    eval_stablehlo,
    parse_stablehlo,
)

__all__ = [
    "ALLOCATION_FAILED",
    "CHLO_EXPANDED_BY_STABLEHLO",
    "CHLO_LEGALIZATION",
    "CPU_PARALLEL_PASSES",
    "CPU_PIPELINE",
    "CUDA_HOST_PIPELINE",
    "HIDDEN_CHLO",
    "KERNEL_PIPELINE",
    "MAX_DECODED_ELEMENTS",
    "MGPU_RUNTIME_SYMBOLS",
    "ORC_INIT_STUB_C",
    "ArgSpec",
    "CompiledCode",
    "JitModule",
    "LibdeviceNotFoundError",
    "LibraryModule",
    "MlirUnavailableError",
    "PreparedCall",
    "Target",
    "UpstreamBlock",
    "UpstreamEnum",
    "UpstreamMlirError",
    "UpstreamOp",
    "UpstreamOpaque",
    "UpstreamParseError",
    "UpstreamType",
    "UpstreamValue",
    "check_allocation",
    "compile_kernels_to_ptx",
    "cpu_pipeline",
    "data_address",
    "dialect_resources",
    "dump_object",
    "eval_stablehlo",
    "extract_ptx",
    "find_libdevice",
    "function_signatures",
    "lower_to_llvm",
    "main",
    "memref_arg",
    "memref_descriptor",
    "parse_stablehlo",
    "verify_upstream",
]
