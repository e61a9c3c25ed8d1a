"""The CUDA executable: the plan lowered by `accy-lower{target=cuda}`, kernels compiled to
PTX, host code JIT-compiled against accy's runtime library.

    exe = accy.compile(text, target="cuda")            # chip="sm_90" by default
    (y,) = exe(x)                                      # numpy in, numpy out
    exe.ptx["accy_kernels"]                            # the kernels' PTX
    print(exe.lowered_text)                            # the upstream MLIR before PTX

Kernels: every `gpu.module` becomes a `gpu.binary` holding PTX for `chip`
(`mlir_bridge.compile_kernels_to_ptx`; kernels that call math functions need libdevice,
found by `mlir_bridge.find_libdevice`, or `LibdeviceNotFoundError` says where it looked).
Host: the ExecutionEngine JITs the host functions and resolves the MLIR GPU runtime ABI
(`mgpu*`) from `libaccy_runtime.so`, which loads the CUDA driver at run time
(`libcuda.so.1`, or `$ACCY_CUDA_DRIVER`). The engine's initialization loads the kernels;
the runtime's error record is checked after it and after every call, so a machine
without a driver or a GPU gets `CudaRuntimeError` with the runtime's message (for example
"cannot load the CUDA driver library 'libcuda.so.1' ...") instead of wrong results.
"""

from __future__ import annotations

import ctypes
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from accy.dtypes import numpy_dtype, tensor_spec
from accy.passes.lower.cuda import lower_cuda_programs
from accy.passes.lower.cuda_kernels import KernelProgram
from accy.passes.lower.host import planned_functions
from accy.passes.planned_form import signature_of
from accy.preparation import Preparation
from accy.reference import check_arguments
from accy.runtime.abi import HOST_SYMBOL_PREFIX
from accy.runtime.libraries import runtime_library_path
from accy.runtime.loader import CallGate, CudaRuntimeError, RuntimeErrors, positional_only
from accy.source import module_text
from accy.targets.executable import Executable, planned_input

DEFAULT_CHIP = "sm_90"


@dataclass(frozen=True)
class CudaCode:
    """A module compiled for CUDA, before it is loaded."""

    lowered_text: str
    """Upstream MLIR: host functions and the `gpu.module` of kernels."""
    binary_text: str
    """The same with every `gpu.module` compiled to a `gpu.binary` (PTX)."""
    ptx: dict[str, str]
    """Kernel module symbol → its PTX."""
    programs: dict[int, KernelProgram]
    """Work item id → its launches."""
    chip: str


def compile_cuda(planned: ModuleOp, *, chip: str = DEFAULT_CHIP, opt: int = 3) -> CudaCode:
    """Lower a planned module (`accy-plan{target=cuda}`) and compile its kernels to PTX
    for `chip`."""
    from accy import mlir_bridge

    lowered, programs = lower_cuda_programs(planned)
    text = module_text(lowered)
    binary = mlir_bridge.compile_kernels_to_ptx(text, chip=chip, opt=opt)
    ptx = {name: code for name, code in mlir_bridge.extract_ptx(binary).items() if ":" not in name}
    return CudaCode(text, binary, ptx, programs, chip)


def result_specs(function: func.FuncOp) -> list[tuple[tuple[int, ...], np.dtype]]:
    specs = []
    for t in function.function_type.outputs:
        assert isinstance(t, TensorType)
        specs.append((tuple(t.get_shape()), numpy_dtype(t.get_element_type())))
    return specs


class CudaFunction:
    """One compiled function: call it with numpy arrays, get a tuple of arrays."""

    def __init__(self, executable: CudaExecutable, function: func.FuncOp):
        self.executable = executable
        self.function = function
        self.name = function.sym_name.data
        self.params = tuple(tensor_spec(a.type, a.name_hint) for a in function.body.block.args)
        """What each argument must be (`accy.arguments.TensorSpec`)."""
        self.last_seconds: float | None = None
        """Wall time of the last call (copies in, kernels, copies out)."""

    def __call__(self, *arrays: Any, **keywords: Any) -> tuple[np.ndarray, ...]:
        if keywords:
            raise positional_only(self.name, keywords)
        checked = check_arguments(self.function, arrays)
        inputs = [np.ascontiguousarray(a) for a in checked]
        executable = self.executable
        executable.gate.enter(self.name)
        try:
            with executable.lock:
                executable.errors.clear()
                start = time.perf_counter()
                outputs = executable.jit.run(self.name, inputs, result_specs(self.function))
                self.last_seconds = time.perf_counter() - start
                executable.errors.check(f"running @{self.name} on the GPU")
        finally:
            executable.gate.leave()
        return tuple(outputs)


class CudaExecutable(Executable):
    """A module compiled for CUDA and loaded; see the module docstring."""

    target = "cuda"

    def __init__(
        self,
        module: ModuleOp,
        preparation: Preparation | None,
        *,
        chip: str = DEFAULT_CHIP,
        opt_level: int = 3,
    ):
        from accy import mlir_bridge

        self.module = module
        self.preparation = preparation
        self.planned = planned_input(module, preparation, "cuda")
        """The planned form it runs (`accy-plan{target=cuda}`)."""
        self.code = compile_cuda(self.planned, chip=chip, opt=opt_level)
        runtime = runtime_library_path()
        self.errors = RuntimeErrors(ctypes.CDLL(str(runtime), mode=ctypes.RTLD_GLOBAL))
        self.lock = threading.Lock()
        self.gate = CallGate("its executable", "compile it again")
        """Counts the calls running in the JIT's code (see `close`)."""
        self.errors.clear()
        self.jit = mlir_bridge.JitModule(
            self.code.binary_text,
            opt_level=opt_level,
            target="cuda",
            shared_libs=[runtime],
            symbol_prefix=HOST_SYMBOL_PREFIX,
        )
        try:
            self.errors.check("loading the kernels")
        except CudaRuntimeError as error:
            raise CudaRuntimeError(
                f"{error}\n(the CUDA target runs on a GPU; without one, accy.export(..., "
                "target='cuda') still compiles ahead of time)"
            ) from None
        self.functions = {
            op.sym_name.data: CudaFunction(self, signature_of(op))
            for op in planned_functions(self.planned)
        }

    def close(self) -> None:
        """Release the JIT engine (its destructor unloads the kernels) once the calls in
        flight have returned; a call afterwards raises `ClosedModuleError`."""
        self.gate.close()
        jit = self.__dict__.pop("jit", None)
        if jit is not None:
            jit.close()

    @property
    def lowered_text(self) -> str:
        return self.code.lowered_text

    @property
    def ptx(self) -> dict[str, str]:
        return self.code.ptx


def build(module: ModuleOp, preparation: Preparation | None, **options: Any) -> CudaExecutable:
    return CudaExecutable(module, preparation, **options)


def plan_defaults(plan_options: dict[str, Any]) -> dict[str, Any]:
    """The plan options, with `sm_count` the GPU's own multiprocessor count when none is
    given and a GPU answers (so the workspaces fit the GPU this process runs on)."""
    if "sm_count" in plan_options:
        return plan_options
    from accy.runtime import device_sm_count

    count = device_sm_count()
    return plan_options if count is None else {**plan_options, "sm_count": count}


def export(
    module: ModuleOp,
    preparation: Preparation,
    directory: Path,
    *,
    opt_level: int,
    cc: str,
    chip: str = DEFAULT_CHIP,
) -> dict:
    """Write the program library, the runtime library and each kernel module's PTX into
    `directory`; the manifest (`accy.aot`)."""
    from accy.aot import export_manifest, host_calls, link_program
    from accy.runtime.libraries import RUNTIME_LIBRARY_NAME

    planned = planned_input(module, preparation, "cuda")
    calls = {op.sym_name.data: host_calls(op) for op in planned_functions(planned)}
    code = compile_cuda(planned, chip=chip, opt=opt_level)
    kernels = {}
    for name, ptx in code.ptx.items():
        (directory / f"{name}.ptx").write_text(ptx)
        kernels[name] = f"{name}.ptx"
    shutil.copyfile(runtime_library_path(), directory / RUNTIME_LIBRARY_NAME)
    manifest = export_manifest(module, preparation, "cuda", code.programs)
    for name, function in manifest["functions"].items():
        function["plan"]["host_calls"] = calls[name]
    manifest.update(runtime=RUNTIME_LIBRARY_NAME, kernels=kernels, chip=chip)
    libraries = [f"-L{directory}", "-l:" + RUNTIME_LIBRARY_NAME, "-Wl,-rpath,$ORIGIN"]
    link_program(
        directory,
        code.binary_text,
        manifest,
        target="cuda",
        opt_level=opt_level,
        cc=cc,
        libraries=libraries,
    )
    return manifest
