"""The host side of every target: a planned function (`accy-plan`) → a `func.func` on memrefs.

`HostLowering` translates the planned host ops one by one, the same way for each target:

- the row count (`arith.constant`, `memref.dim`) is cloned at the function's start;
- `accy.arena` and `accy.alloc` become the target's allocations (`allocate`), all made at
  the function's start, before anything runs; an arena in an out-parameter is that
  out-parameter's bytes (`bytes_of`); `accy.view` is a `memref.view` of the arena at its
  planned offset;
- an `accy.global` in host memory is a private constant `memref.global` of the module
  (`accy_constant_N`, 64-byte aligned) read with `memref.get_global`; one in device constant
  memory stays for the kernel patterns (which put its data into their module) and then goes;
- `accy.copy` is the target's copy (`copy`), `accy.loop` an `scf.for` over its trip count,
  `accy.while_loop` an `scf.while` whose before region runs the cond and loads the flag;
- `accy.kernel` is cloned with its operands lowered, then rewritten by the target's
  `KernelPattern`s (`kernel_patterns`: one per kernel kind, loops on the CPU, launches of
  `gpu.func`s on CUDA), driven by xDSL's pattern rewriter; a kernel no pattern takes is an
  error;
- `func.return` frees the allocations, last first, and returns.

When the function allocates, everything after the allocations runs inside an `scf.if`
taken only when every allocation succeeded (a failed one returns null); otherwise the
target's `allocation_failed` runs. Buffer types lose their planned memory space: the
lowered function is `@accy_fn_f(%in..., %out...)` on plain memrefs, `llvm.emit_c_interface`.

Symbols: the lowered function of `@f` is `host_symbol("f")` (`accy.runtime.abi`), `accy_fn_f` (its C interface
`_mlir_ciface_accy_fn_f`), so no name a program gives a function is a symbol of anything
else in the process or the module: the C library's and libm's (`abs`, `exit`, `main`,
`_start`), the runtimes' (`mgpu*`, `mlirAsyncRuntime*`, `accy_*`), the module's own globals
(`accy_constant_N`, the kernel module `accy_kernels`, `accy_allocation_failed`) or what
upstream passes outline (`parallel_compute_fn`). Callers (the JIT, `accy.export`'s
manifest) keep the program's names and look up `host_symbol(name)`.

Invariants: the lowered function reads nothing but the planned function (and the module
attributes `accy.target` and `accy.sm_count`); every planned buffer maps to one lowered
memref (none for constant memory); the allocations are freed on every path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from accy.dialects import plan
from accy.dialects.plan import MemorySpace, space_of
from accy.passes.element_types import signless
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import constant, emit, signless_dense
from xdsl.builder import Builder
from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from accy.diagnostics import AccyError
from accy.runtime.abi import host_symbol

INDEX = IndexType()
EMIT_C_INTERFACE = "llvm.emit_c_interface"
CONSTANT_ALIGNMENT = 64


def lowered_type(t: Attribute) -> MemRefType:
    """A planned buffer type without its memory space, of `signless` elements."""
    assert isinstance(t, MemRefType), t
    return MemRefType(signless(t.get_element_type()), list(t.get_shape()), NoneAttr(), NoneAttr())


class HostGlobals:
    """The module's host constants (`memref.global`), at the top of its block."""

    def __init__(self, module: ModuleOp):
        self.block = module.body.block
        self.count = 0
        self.by_name: dict[str, memref.GlobalOp] = {}

    def value_of(self, read: memref.GetGlobalOp) -> DenseIntOrFPElementsAttr:
        """The data of the host constant `read` reads."""
        value = self.by_name[read.name_.root_reference.data].initial_value
        assert isinstance(value, DenseIntOrFPElementsAttr)
        return value

    def add(self, op: plan.GlobalOp) -> memref.GlobalOp:
        name = f"accy_constant_{self.count}"
        self.count += 1
        global_op = memref.GlobalOp.get(
            StringAttr(name),
            lowered_type(op.buffer.type),
            signless_dense(op.value),
            StringAttr("private"),
            UnitAttr(),
            alignment=CONSTANT_ALIGNMENT,
        )
        self.by_name[name] = global_op
        first = self.block.first_op
        if first is None:
            self.block.add_op(global_op)
        else:
            self.block.insert_op_before(global_op, first)
        return global_op


class KernelPattern(RewritePattern):
    """Lowers the `accy.kernel`s it `matches` with `lower`, which builds at the kernel
    through the rewriter (a `Builder` before it); the kernel is then erased. The kernel's
    ins, outs, workspaces and rows are already the lowered host values."""

    function: str
    """The name of the function being lowered."""

    @abstractmethod
    def matches(self, kernel: PlannedKernel) -> bool: ...

    @abstractmethod
    def lower(self, rewriter: PatternRewriter, kernel: PlannedKernel) -> None: ...

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: plan.KernelOp, rewriter: PatternRewriter) -> None:
        kernel = PlannedKernel.of(op, self.function)
        if self.matches(kernel):
            self.lower(rewriter, kernel)
            rewriter.erase(op)


class FunctionConstants:
    """What the kernel patterns read of the function they build in: its constants, built
    once at its start (`start`, by value and type), its row count and the module's host
    constants (`globals`); `name` is the planned function's, for diagnostics."""

    def __init__(self, name: str, globals_: HostGlobals):
        self.name = name
        self.globals = globals_
        self.constants: dict[tuple[object, Attribute], SSAValue] = {}
        self._rows: SSAValue | None = None
        self.prologue = Block()
        self.start = Builder(InsertPoint.at_end(self.prologue))

    def index(self, value: int) -> SSAValue:
        """An index constant, built once at the function's start."""
        return self.scalar(value, INDEX)

    def scalar(self, value: object, t: Attribute) -> SSAValue:
        """A scalar constant of type `t`, built once at the function's start (a float by
        its bits: -0.0 is not 0.0)."""
        key = (value.hex() if isinstance(value, float) else value, t)
        if key not in self.constants:
            self.constants[key] = constant(self.start, value, t)
        return self.constants[key]

    @property
    def rows(self) -> SSAValue:
        """The lowered row count (the planned function's `memref.dim`)."""
        if self._rows is None:
            raise AccyError(f"internal: @{self.name} has dynamic buffers but no row count")
        return self._rows


class HostLowering(FunctionConstants, ABC):
    """Lowers one planned function (see the module doc); targets override the hooks
    `allocate`, `deallocate`, `copy`, `kernel_patterns` and `allocation_failed`."""

    def __init__(self, planned: func.FuncOp, globals_: HostGlobals):
        super().__init__(planned.sym_name.data, globals_)
        self.planned = planned
        self.lowered: dict[SSAValue, SSAValue | None] = {}
        """Planned value → its lowered value (None: a constant-memory buffer)."""
        self.allocated: list[SSAValue] = []

    # -- the hooks ---------------------------------------------------------------------

    @abstractmethod
    def allocate(
        self,
        b: Builder,
        t: MemRefType,
        sizes: Sequence[SSAValue],
        alignment: int,
        *,
        host: bool = False,
    ) -> SSAValue:
        """A new buffer of type `t` (dynamic `sizes`), aligned to `alignment` bytes or more
        (`host`: in host memory, where the target's default is another)."""

    @abstractmethod
    def deallocate(self, b: Builder, buffer: SSAValue) -> None:
        """Free a buffer `allocate` made (a null one included)."""

    @abstractmethod
    def copy(self, b: Builder, source: SSAValue, target: SSAValue) -> None:
        """Copy `source` into `target` (same type, any of the target's memories)."""

    @abstractmethod
    def kernel_patterns(self) -> Sequence[KernelPattern]:
        """The target's patterns, one per kernel kind (or family)."""

    def unlowered(self, kernel: PlannedKernel) -> AccyError:
        """The error for a kernel no pattern lowers."""
        return AccyError(
            f"kernel {kernel.id} of kind {kernel.kind.value} has no lowering on this target",
            kernel.op.location,
        )

    def allocation_failed(self, b: Builder) -> None:
        """What runs when an allocation failed (after it, every allocation is freed)."""

    # -- shared helpers ----------------------------------------------------------------

    def buffer(self, planned: SSAValue) -> SSAValue:
        """The lowered memref of a planned buffer."""
        lowered = self.lowered.get(planned)
        if lowered is None:
            raise AccyError(
                f"internal: @{self.name} reads {planned.name_hint or planned} from no host buffer",
                planned.owner.location if isinstance(planned.owner, Operation) else None,
            )
        return lowered

    def add_allocation(
        self,
        t: MemRefType,
        sizes: Sequence[SSAValue] = (),
        alignment: int = 64,
        *,
        host: bool = False,
    ) -> SSAValue:
        """A buffer among the function's allocations (`host`: in host memory on every
        target), freed at its end."""
        buffer = self.allocate(self.allocations, t, sizes, alignment, host=host)
        self.allocated.append(buffer)
        return buffer

    # -- the function ------------------------------------------------------------------

    def lower(self) -> func.FuncOp:
        planned_args = self.planned.body.block.args
        types = [lowered_type(a.type) for a in planned_args]
        entry = Block(arg_types=types)
        for old, new in zip(planned_args, entry.args):
            self.lowered[old] = new
            new.name_hint = old.name_hint
        self.allocation_block = Block()
        self.allocations = Builder(InsertPoint.at_end(self.allocation_block))
        run = Block()
        body = Region(run)
        self._ops(Builder(InsertPoint.at_end(run)), self.planned.body.block)
        self._lower_kernels(body)
        b = Builder(InsertPoint.at_end(entry))
        if self.allocated:
            run.add_op(scf.YieldOp())
            failed = Block()
            self.allocation_failed(Builder(InsertPoint.at_end(failed)))
            otherwise = None
            if failed.first_op is not None:
                failed.add_op(scf.YieldOp())
                otherwise = Region(failed)
            b.insert(scf.IfOp(self._all_allocated(b), [], body, otherwise))
        else:
            for op in list(run.ops):
                op.detach()
                entry.add_op(op)
        for buffer in reversed(self.allocated):
            self.deallocate(b, buffer)
        b.insert(func.ReturnOp())
        first = entry.first_op
        for block in (self.prologue, self.allocation_block):  # built last: they grow to the end
            for op in list(block.ops):
                op.detach()
                entry.insert_op_before(op, first)  # type: ignore[arg-type]
        function = func.FuncOp(
            host_symbol(self.name), FunctionType.from_lists(types, []), Region(entry)
        )
        function.attributes[EMIT_C_INTERFACE] = UnitAttr()
        return function

    def _lower_kernels(self, body: Region) -> None:
        """Apply the target's kernel patterns to every `accy.kernel` of `body`; then no
        kernel may remain, and the constant-memory globals the kernels read go."""
        patterns = GreedyRewritePatternApplier(list(self.kernel_patterns()))
        PatternRewriteWalker(patterns, apply_recursively=False).rewrite_region(body)
        for op in list(body.walk()):
            if isinstance(op, plan.KernelOp):
                raise self.unlowered(PlannedKernel.of(op, self.name))
            if isinstance(op, plan.GlobalOp) and not op.buffer.uses:
                op.detach()
                op.erase()

    def _all_allocated(self, b: Builder) -> SSAValue:
        ok: SSAValue | None = None
        for buffer in self.allocated:
            pointer = emit(b, memref.ExtractAlignedPointerAsIndexOp.get(buffer))
            nonzero = emit(b, arith.CmpiOp(pointer, self.index(0), "ne"))
            ok = nonzero if ok is None else emit(b, arith.AndIOp(ok, nonzero))
        assert ok is not None
        return ok

    def _ops(self, b: Builder, block: Block) -> None:
        for op in block.ops:
            self._op(b, op)

    def _op(self, b: Builder, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            self.lowered[op.result] = self.scalar(op.value.value.data, op.result.type)
        elif isinstance(op, (arith.ConstantOp, memref.DimOp)):
            clone = op.clone(value_mapper=self.lowered)  # type: ignore[arg-type]
            self.start.insert(clone)
            self.lowered[op.results[0]] = clone.results[0]
            clone.results[0].name_hint = op.results[0].name_hint
            if isinstance(clone, memref.DimOp):
                self._rows = clone.result
        elif isinstance(op, plan.ArenaOp) and op.backing is not None:
            self._bind(op.buffer, bytes_of(b, self.buffer(op.backing), op.size))
        elif isinstance(op, plan.ArenaOp):
            t = MemRefType(i8, list(op.buffer.type.get_shape()))  # type: ignore[attr-defined]
            self._bind(op.buffer, self.add_allocation(t, (), op.alignment.value.data))
        elif isinstance(op, plan.AllocOp):
            sizes = [self.buffer(s) for s in op.sizes]
            host = space_of(op.buffer.type) is MemorySpace.HOST
            self._bind(
                op.buffer, self.add_allocation(lowered_type(op.buffer.type), sizes, host=host)
            )
        elif isinstance(op, plan.ViewOp):
            t = lowered_type(op.buffer.type)
            dynamic = [self.rows for d in t.get_shape() if d < 0]
            view = memref.ViewOp(
                self.buffer(op.arena), self.index(op.offset.value.data), dynamic, t
            )
            self._bind(op.buffer, emit(b, view))
        elif isinstance(op, plan.GlobalOp):
            if not op.buffer.uses:
                self.lowered[op.buffer] = None
            elif space_of(op.buffer.type) is MemorySpace.DEVICE_CONSTANT:
                self._bind(op.buffer, b.insert(op.clone()).buffer)  # the kernels hold it
            else:
                global_op = self.globals.add(op)
                self._bind(
                    op.buffer, emit(b, memref.GetGlobalOp(global_op.sym_name.data, global_op.type))
                )
        elif isinstance(op, plan.CopyOp):
            self.copy(b, self.buffer(op.source), self.buffer(op.target))
        elif isinstance(op, plan.LoopOp):
            body = Block(arg_types=[INDEX])
            trip_count = self.index(op.trip_count.value.data)
            b.insert(scf.ForOp(self.index(0), trip_count, self.index(1), [], body))
            inner = Builder(InsertPoint.at_end(body))
            self._ops(inner, op.body.block)
            inner.insert(scf.YieldOp())
        elif isinstance(op, plan.WhileLoopOp):
            before, after = Block(), Block()
            b.insert(scf.WhileOp([], [], Region(before), Region(after)))
            test = Builder(InsertPoint.at_end(before))
            self._ops(test, op.cond.block)
            flag = emit(test, memref.LoadOp.get(self.buffer(op.flag), []))
            test.insert(scf.ConditionOp(flag))
            inner = Builder(InsertPoint.at_end(after))
            self._ops(inner, op.body.block)
            inner.insert(scf.YieldOp())
        elif isinstance(op, plan.KernelOp):
            b.insert(op.clone(value_mapper=self.lowered))  # type: ignore[arg-type]
        elif isinstance(op, func.ReturnOp):
            pass
        else:
            raise AccyError(f"'{op.name}' op is not a planned host op", op.location)

    def _bind(self, planned: SSAValue, lowered: SSAValue) -> None:
        self.lowered[planned] = lowered
        lowered.name_hint = planned.name_hint


def bytes_of(b: Builder, buffer: SSAValue, size: int) -> SSAValue:
    """The first `size` bytes of `buffer` as a `memref<size x i8>` (an arena in an
    out-parameter): the same memory, through its LLVM descriptor (the allocated pointer,
    the aligned one moved by the offset), cast back and forth with
    `builtin.unrealized_conversion_cast`, which `reconcile-unrealized-casts` removes."""
    t = buffer.type
    assert isinstance(t, MemRefType)
    rank = len(t.get_shape())
    pointer, i64 = llvm.LLVMPointerType(), IntegerType(64)

    def descriptor(rank: int) -> llvm.LLVMStructType:
        sizes = [llvm.LLVMArrayType(IntAttr(rank), i64)] * 2 if rank else []
        return llvm.LLVMStructType.from_type_list([pointer, pointer, i64, *sizes])

    def at(*position: int) -> DenseArrayBase:
        return DenseArrayBase.from_list(i64, position)

    source = emit(b, UnrealizedConversionCastOp.get([buffer], [descriptor(rank)]))
    allocated = emit(b, llvm.ExtractValueOp(at(0), source, pointer))
    aligned = emit(b, llvm.ExtractValueOp(at(1), source, pointer))
    offset = emit(b, llvm.ExtractValueOp(at(2), source, i64))
    width = (t.get_element_type().bitwidth + 7) // 8  # type: ignore[attr-defined]
    skipped = emit(b, arith.MuliOp(offset, constant(b, width, i64)))
    first = emit(b, llvm.GEPOp(aligned, [llvm.GEP_USE_SSA_VAL], i8, [skipped]))
    view = emit(b, llvm.UndefOp(descriptor(1)))
    fields = [
        (at(0), allocated),
        (at(1), first),
        (at(2), constant(b, 0, i64)),
        (at(3, 0), constant(b, size, i64)),
        (at(4, 0), constant(b, 1, i64)),
    ]
    for position, value in fields:
        view = emit(b, llvm.InsertValueOp(position, view, value))
    return emit(b, UnrealizedConversionCastOp.get([view], [MemRefType(i8, [size])]))


def drop_unread_globals(module: ModuleOp) -> None:
    """Erase the `memref.get_global`s nothing reads (a splat constant that kernels read as
    scalars) and then the host globals no `get_global` names, so a splat
    `tensor<1024x1024xf32>` does not become 4 MB of data in the compiled module."""
    named: set[str] = set()
    for op in list(module.walk()):
        if isinstance(op, memref.GetGlobalOp):
            if op.memref.uses:
                named.add(op.name_.root_reference.data)
            else:
                op.detach()
                op.erase()
    for op in list(module.body.block.ops):
        if isinstance(op, memref.GlobalOp) and op.sym_name.data not in named:
            op.detach()
            op.erase()


def planned_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The planned functions of a planned module (declarations left out)."""
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
