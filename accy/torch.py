"""`accy.torch.compile`: a PyTorch module compiled by accy, called with torch tensors.

    model = accy.torch.compile(transformers.BertModel(config), (input_ids,))
    outputs = model(input_ids)     # the module's own outputs (a tensor, a tuple, a ModelOutput)

The module is exported in eval mode by `torch.export` and torch-mlir's FX importer to
StableHLO (`torch_mlir.fx.export_and_import`) with its parameters and buffers as
arguments (`Stateless`: kilobytes of text, not the weights written out), then compiled
by `accy.compile`. A call passes the module's current parameters and buffers (numpy views
of torch's CPU tensors, not copies) and its inputs; inputs of a new signature (shapes and
dtypes) are exported and compiled anew, each program kept (`CompiledModule.compiled`).
Results come back in the module's output structure, as torch tensors, or as numpy arrays
when the inputs were numpy arrays; f32, f16 and bf16. A module PyTorch or torch-mlir
cannot export is an `AccyError` naming their error (transformers' GPT-2 exports with
`attn_implementation="eager"`, not with its sdpa form). Needs PyTorch and torch-mlir
(`pip install 'accy[torch]'`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from accy.diagnostics import AccyError, wrong_type
from accy.runtime.loader import dtype_of

try:
    import torch
except ModuleNotFoundError:
    raise AccyError("accy.torch needs PyTorch: pip install 'accy[torch]'") from None
from accy.targets import DEFAULT_TARGET


def compile(
    module: torch.nn.Module,
    example_inputs: Sequence[Any] | Any = (),
    *,
    target: str = DEFAULT_TARGET,
    **compile_options: Any,
) -> CompiledModule:
    """`module` compiled by accy for `example_inputs` (a tuple of tensors or arrays; a
    single one is a 1-tuple), and for other input shapes when called with them;
    `compile_options` are `accy.compile`'s (`threads`, ...)."""
    if not isinstance(module, torch.nn.Module):
        raise wrong_type("accy.torch.compile", "module", "a torch.nn.Module", module)
    compiled = CompiledModule(module, target, compile_options)
    inputs = example_inputs if isinstance(example_inputs, tuple | list) else (example_inputs,)
    compiled.program_for([_tensor(x) for x in inputs])
    return compiled


class Stateless(torch.nn.Module):
    """`module` as a function of its parameters and buffers (by `names`) and its inputs:
    what is exported, so that its state arrives as arguments. `module` is held outside
    the module tree, so `torch.export` lifts none of its tensors."""

    def __init__(self, module: torch.nn.Module, names: Sequence[str]):
        super().__init__()
        self.__dict__["stateful"] = module
        self.names = list(names)

    def forward(self, *flat: torch.Tensor) -> Any:
        count = len(self.names)
        state = dict(zip(self.names, flat[:count]))
        return torch.func.functional_call(self.__dict__["stateful"], state, tuple(flat[count:]))


class CompiledModule:
    """A module compiled by accy for each input signature it is called with."""

    def __init__(self, module: torch.nn.Module, target: str, compile_options: dict[str, Any]):
        self.module = module
        self.target = target
        self.compile_options = compile_options
        self.compiled: dict[Hashable, tuple[Any, Any]] = {}
        """(executable, output structure) by input signature."""

    def state(self) -> dict[str, torch.Tensor]:
        """The module's parameters and buffers now, by name."""
        return {
            **dict(self.module.named_parameters(remove_duplicate=False)),
            **dict(self.module.named_buffers(remove_duplicate=False)),
        }

    def program_for(self, inputs: list[torch.Tensor]) -> tuple[Any, Any]:
        """The program for `inputs`' signature, exported and compiled on first use."""
        key = tuple((tuple(x.shape), x.dtype) for x in inputs)
        found = self.compiled.get(key)
        if found is None:
            found = self.compiled[key] = self._compile(inputs)
        return found

    def _compile(self, inputs: list[torch.Tensor]) -> tuple[Any, Any]:
        from accy.compiler import compile as accy_compile
        from accy.mlir_bridge.torch_export import stablehlo_of_exported_program

        state = self.state()
        stateless = Stateless(self.module, list(state))
        training = self.module.training
        self.module.eval()
        try:
            with torch.no_grad():
                program = torch.export.export(stateless, (*state.values(), *inputs), strict=False)
                text = stablehlo_of_exported_program(program)
        except Exception as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise AccyError(
                f"torch.export and torch-mlir could not export {type(self.module).__name__} "
                f"to StableHLO ({type(error).__name__}: {first}); accy saw no program"
            ) from error
        finally:
            self.module.train(training)
        executable = accy_compile(text, self.target, **self.compile_options)
        return executable, program.call_spec.out_spec

    def __call__(self, *inputs: Any) -> Any:
        as_numpy = bool(inputs) and all(isinstance(x, np.ndarray) for x in inputs)
        tensors = [_tensor(x) for x in inputs]
        executable, out_spec = self.program_for(tensors)
        arguments = [_array(t) for t in (*self.state().values(), *tensors)]
        outputs = executable["main"](*arguments)
        results = list(outputs) if as_numpy else [_from_array(a) for a in outputs]
        return torch.utils._pytree.tree_unflatten(results, out_spec)


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return _from_array(value)
    raise wrong_type("a compiled module", "an input", "a torch.Tensor or numpy array", value)


def _array(tensor: torch.Tensor) -> np.ndarray:
    """A tensor's values as a numpy array (a view of a contiguous CPU tensor)."""
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(dtype_of("bfloat16"))
    return tensor.numpy()


def _from_array(array: np.ndarray) -> torch.Tensor:
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
