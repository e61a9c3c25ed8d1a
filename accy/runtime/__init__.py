"""accy's runtime: native libraries that run compiled programs.

``libaccy_runtime.so`` implements the MLIR GPU runtime ABI (the ``mgpu*``
functions that MLIR's ``gpu-to-llvm`` lowering calls) over the CUDA driver API,
which it loads at run time (``libcuda.so.1``, or the path in the environment
variable ``ACCY_CUDA_DRIVER``). ``libaccy_fake_cuda.so`` is a fake CUDA driver
for tests: it keeps "device" memory in host memory, logs every call, checks
for misuse, and runs no kernel.

``load(path)`` loads a program compiled ahead of time by ``accy.export``.

This package imports only the standard library and numpy, so that compiled
programs run where no compiler package is installed.
"""

from accy.runtime.libraries import fake_driver_library_path, runtime_library_path
from accy.runtime.loader import (
    ClosedModuleError,
    CudaRuntimeError,
    UnsupportedCpuError,
    device_sm_count,
    load,
)

__all__ = [
    "ClosedModuleError",
    "CudaRuntimeError",
    "UnsupportedCpuError",
    "device_sm_count",
    "fake_driver_library_path",
    "load",
    "runtime_library_path",
]
