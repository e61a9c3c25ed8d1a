"""Kernels that occur more than once in a planned module, lowered once (CPU).

A transformer's twelve layers plan twelve copies of each of their kernels; lowered in place,
each copy is loops of its own for xDSL to build and LLVM to optimise. Kernels with the same
structure (`kernel_key`: body, kind, family, workspaces, operand types and which operands
are the same buffer, and the values of the splat constants they read as scalars) are
outlined into one private function, `accy_kernel_N(%operand...)`, built once by the
target's kernel patterns and called at each use with that use's buffers; a kernel whose
structure occurs once stays in place. The function is `llvm.no_inline`: LLVM would
otherwise copy it back into every caller.

Invariants: the key is computed on the planned form, before lowering, so the functions do
not depend on which function or layer lowers first; a use passes its distinct operand
buffers in the order they first occur among the kernel's operands (its ins, outs and
workspaces), leaving out the splat constants (whose values are in the key: the function
reads them as scalars as the in-place lowering does). Kernels with a row count (dynamic
shapes) stay in place.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence

from accy.dialects import plan
from accy.passes.buffers import splat_of
from accy.passes.lower.host import FunctionConstants, HostGlobals, KernelPattern
from xdsl.builder import Builder
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.rewriter import InsertPoint

KERNEL_SYMBOL_PREFIX = "accy_kernel_"
NO_INLINE = "llvm.no_inline"


def kernel_key(op: plan.KernelOp) -> str:
    """The structure of a planned kernel (see the module doc) as text: equal keys lower
    to the same code."""
    distinct: list[SSAValue] = []
    operands = []
    for operand in op.operands:
        owner = operand.owner
        scalar = splat_of(owner.value) if isinstance(owner, plan.GlobalOp) else None
        if scalar is not None:
            operands.append(f"splat {scalar!r} {operand.type}")
            continue
        if operand not in distinct:
            distinct.append(operand)
        operands.append(f"%{distinct.index(operand)} : {operand.type}")
    segments = (len(op.ins), len(op.outs), len(op.workspaces))
    header = (op.kind.data, op.family, op.workspace_names, segments)
    return f"{header} ({', '.join(operands)})\n" + "\n".join(_structure(op.body.block))


def _structure(block: Block) -> list[str]:
    """A line per block and op of `block` and its regions: op names, operands and results
    by number, types, attributes (dense data by a digest of its bytes, so a kernel holding
    a large constant costs no printing of it)."""
    numbers: dict[SSAValue, int] = {}
    lines: list[str] = []

    def number(value: SSAValue) -> str:
        return f"{numbers.setdefault(value, len(numbers))}:{value.type}"

    def visit(block: Block) -> None:
        lines.append("^" + " ".join(number(arg) for arg in block.args))
        for inner in block.ops:
            used = [str(numbers.get(operand, f"outer {id(operand)}")) for operand in inner.operands]
            attributes = sorted(
                (name, _attribute(value))
                for name, value in (*inner.properties.items(), *inner.attributes.items())
            )
            results = [number(result) for result in inner.results]
            lines.append(f"{inner.name} {used} {attributes} -> {results}")
            for region in inner.regions:
                for nested in region.blocks:
                    visit(nested)
                lines.append("}")

    visit(block)
    return lines


def _attribute(value: Attribute) -> str:
    if isinstance(value, DenseIntOrFPElementsAttr):
        digest = hashlib.blake2b(value.data.data, digest_size=16).hexdigest()
        return f"dense {value.type} {digest}"
    return str(value)


class SharedKernels:
    """The module's kernels by structure: which occur more than once (`key_of`), and the
    function lowered for each (`call`)."""

    def __init__(self, planned: ModuleOp, lowered: ModuleOp):
        self.keys: dict[tuple[str, int], str] = {}
        seen: Counter[tuple[str, int]] = Counter()
        for function in planned.ops:
            if not isinstance(function, func.FuncOp):
                continue
            for op in function.walk():
                if isinstance(op, plan.KernelOp):
                    place = (function.sym_name.data, op.id.value.data)
                    seen[place] += 1
                    if op.rows is None:
                        self.keys[place] = kernel_key(op)
        for place, count in seen.items():  # a kernel found by its id only where that is one
            if count > 1:
                self.keys.pop(place, None)
        counts = Counter(self.keys.values())
        self.repeated = {key for key, count in counts.items() if count > 1}
        self.module = lowered
        self.symbols: dict[str, str] = {}
        """Key → its function's symbol, once lowered."""

    def key_of(self, function: str, op: plan.KernelOp) -> str | None:
        """The key of kernel `op` of `function` where its structure occurs more than once."""
        key = self.keys.get((function, op.id.value.data))
        return key if key in self.repeated else None

    def call(
        self,
        op: plan.KernelOp,
        key: str,
        globals_: HostGlobals,
        function: str,
        patterns: Callable[[FunctionConstants], Sequence[KernelPattern]],
    ) -> None:
        """Replace the lowered kernel `op` (its operands the host's buffers) by a call of
        its structure's function, lowering that function first if no use has."""
        arguments = _arguments(op, globals_)
        symbol = self.symbols.get(key)
        if symbol is None:
            symbol = self._outline(op, arguments, globals_, function, patterns)
            self.symbols[key] = symbol
        Builder(InsertPoint.before(op)).insert(func.CallOp(symbol, arguments, []))
        op.detach()
        op.erase()

    def _outline(
        self,
        op: plan.KernelOp,
        arguments: list[SSAValue],
        globals_: HostGlobals,
        function: str,
        patterns: Callable[[FunctionConstants], Sequence[KernelPattern]],
    ) -> str:
        symbol = f"{KERNEL_SYMBOL_PREFIX}{len(self.symbols)}"
        constants = FunctionConstants(function, globals_)
        entry = Block(arg_types=[a.type for a in arguments])
        mapping: dict[SSAValue, SSAValue] = dict(zip(arguments, entry.args))
        for operand in op.operands:  # the splat constants: read here as in the host
            if operand not in mapping:
                mapping[operand] = constants.start.insert(operand.owner.clone()).results[0]  # type: ignore[union-attr]
        run = Block([op.clone(value_mapper=mapping)])
        PatternRewriteWalker(
            GreedyRewritePatternApplier(list(patterns(constants))), apply_recursively=False
        ).rewrite_region(Region(run))
        for block in (constants.prologue, run):
            for lowered in list(block.ops):
                lowered.detach()
                entry.add_op(lowered)
        entry.add_op(func.ReturnOp())
        outlined = func.FuncOp(
            symbol,
            ([a.type for a in arguments], []),
            Region(entry),
            visibility=StringAttr("private"),
        )
        outlined.attributes[NO_INLINE] = UnitAttr()
        self.module.body.block.add_op(outlined)
        return symbol


def _arguments(op: plan.KernelOp, globals_: HostGlobals) -> list[SSAValue]:
    """The distinct operand buffers of a lowered kernel, in order, but its splat constants."""
    arguments: list[SSAValue] = []
    for operand in op.operands:
        owner = operand.owner
        if isinstance(owner, memref.GetGlobalOp) and splat_of(globals_.value_of(owner)) is not None:
            continue
        if operand not in arguments:
            arguments.append(operand)
    return arguments
