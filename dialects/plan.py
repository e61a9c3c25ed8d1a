"""The planned form of an accy program: every planning decision as IR over explicit buffers.

`accy-plan` turns each accy function into a host function on buffers (memrefs whose memory
space is a `#accy.space<...>` attribute):

    func.func @f(%in: memref<4x8xf32, #accy.space<host>>,
                 %out: memref<4xf32, #accy.space<host>> {accy.output = 0})
        attributes {accy.planned}
      %arena = accy.arena alignment 256 : memref<1024xi8, #accy.space<device_global>>
      %s0 = accy.view %arena[0] : ... to memref<4x8xf32, #accy.space<device_global>>
      accy.copy %in to %s0 : ...                      // a planned host -> device transfer
      accy.kernel 0 "reduce" ins(%s0 : ...) outs(%s1 : ...) {
      ^bb0(%x: tensor<4x8xf32>):
        %r = accy.reduce add %x dims [1] ...           // the work item's fused body
        accy.yield %r : tensor<4xf32>
      } {family = "reduce.row"}
      accy.copy %s1 to %out : ...                     // device -> host
      func.return

- `accy.arena`: one allocation per function, the size in its type (on the CPU, also arenas
  in out-parameters' bytes, scratch until their result is written); `accy.view`: a slot (or
  a workspace) at a byte offset of one; `accy.alloc`: a buffer of its own (a dynamic slot, a
  staging buffer); `accy.global`: a constant's buffer with its data.
- `accy.kernel`: one work item. Block argument `i` of its body is the tensor stored in
  `ins[i]`; the yielded value `j` is stored into `outs[j]`; `workspaces` are the byte buffers
  of its family, named by `workspace_names`. A kernel writes only its outs and workspaces.
- `accy.copy`: a transfer (host <-> device: the spaces of the two buffers say which), an
  output alias, a loop's carried values; `accy.loop`: an `accy.iterate`'s host loop;
  `accy.while_loop`: an `accy.while`'s, reading its condition from a host buffer.

Op verifiers check what one op can see (arenas aligned to a power of two, views inside
their arena and aligned, kernel bodies matching their buffers, no kernel or copy writing a
constant); `plan_verifier` checks the whole function (known target and
kernel kinds, unique kernel ids, out-parameters numbered in order, parameters never
written, every read after a write, no two live buffers overlapping, every output written).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum, StrEnum

from accy.dialects.accy import EndsWithYield, YieldOp
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
    i8,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException


class MemorySpace(StrEnum):
    """Where a buffer lives (the seed's memory spaces)."""

    HOST = "host"
    DEVICE_GLOBAL = "device_global"
    DEVICE_CONSTANT = "device_constant"
    DEVICE_SHARED = "device_shared"
    UNIFIED = "unified"


@irdl_attr_definition
class MemorySpaceAttr(EnumAttribute[MemorySpace]):
    """`#accy.space<device_global>`: the memory space of a planned buffer."""

    name = "accy.space"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> MemorySpace:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(MemorySpace)


PLANNED = "accy.planned"
"""The function attribute of a planned function (its value: the target it was planned for)."""

OUTPUT = "accy.output"
"""The argument attribute of an out-parameter: the index of the result it receives."""

DONOR = "accy.donor"
"""(CPU) The argument attribute of an out-parameter that takes a donated parameter's buffer
over: that parameter's index. The caller may pass that parameter's array as this
out-parameter (it is read no more once the out-parameter is first written)."""


def _argument_attribute(value: SSAValue, name: str) -> Attribute | None:
    """The argument attribute `name` of `value`, a function's argument (else None)."""
    if not isinstance(value, BlockArgument):
        return None
    function = value.block.parent_op()
    if not isinstance(function, FuncOp) or function.arg_attrs is None:
        return None
    return function.arg_attrs.data[value.index].data.get(name)


def is_output(value: SSAValue) -> bool:
    """Whether `value` is an out-parameter of a planned function (`accy.output`)."""
    return _argument_attribute(value, OUTPUT) is not None


def donor_of(value: SSAValue) -> BlockArgument | None:
    """The parameter an out-parameter takes over (`accy.donor`), or None."""
    entry = _argument_attribute(value, DONOR)
    if not isinstance(entry, IntegerAttr):
        return None
    assert isinstance(value, BlockArgument)
    return value.block.args[entry.value.data]


def buffer_type(t: TensorType, space: MemorySpace) -> MemRefType:
    """The buffer of a tensor type in `space`."""
    return MemRefType(t.get_element_type(), t.get_shape(), NoneAttr(), MemorySpaceAttr(space))


def space_of(t: Attribute) -> MemorySpace | None:
    """The planned memory space of a buffer type (None when it has none)."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, MemorySpaceAttr):
        return t.memory_space.data
    return None


def buffer_bytes(t: MemRefType, rows: int = 0) -> int:
    """The bytes of a buffer whose dynamic dims are `rows` (default 0)."""
    count = 1
    for d in t.get_shape():
        count *= rows if d < 0 else d
    return count * max(1, (t.get_element_type().bitwidth + 7) // 8)  # type: ignore[attr-defined]


@irdl_op_definition
class ArenaOp(IRDLOperation):
    """`%a = accy.arena alignment 256 : memref<1024xi8, #accy.space<device_global>>`: a
    function's arena, allocated once; `alignment` is a power of two, and every view's
    offset is a multiple of it.

    `%a = accy.arena alignment 64 in %out : memref<4x128xf32, S> : memref<2048xi8, S>`: an
    arena in the bytes of out-parameter `%out` (CPU), scratch for temporaries that die
    before anything touches `%out` (`plan_verifier` checks it); as large as `%out` at most,
    in its memory space."""

    name = "accy.arena"

    alignment = prop_def(IntegerAttr.constr(type=i64))
    backing = opt_operand_def(MemRefType)
    buffer = result_def(MemRefType)

    assembly_format = (
        "`alignment` $alignment (`in` $backing^ `:` type($backing))? attr-dict `:` type($buffer)"
    )

    def __init__(
        self, size: int, alignment: int, space: MemorySpace, backing: SSAValue | None = None
    ):
        super().__init__(
            operands=[[] if backing is None else [backing]],
            result_types=[MemRefType(i8, [size], NoneAttr(), MemorySpaceAttr(space))],
            properties={"alignment": IntegerAttr(alignment, i64)},
        )

    def verify_(self) -> None:
        t = self.buffer.type
        if t.get_element_type() != i8 or len(t.get_shape()) != 1 or t.get_shape()[0] < 0:
            raise VerifyException(f"an arena is a static memref of i8 bytes, not {t}")
        alignment = self.alignment.value.data
        if alignment < 1:
            raise VerifyException(f"alignment {alignment} is not positive")
        if alignment & (alignment - 1):
            raise VerifyException(f"alignment {alignment} is not a power of two")
        if self.backing is None:
            return
        backing = self.backing.type
        assert isinstance(backing, MemRefType)
        if any(d < 0 for d in backing.get_shape()):
            raise VerifyException(f"an arena lies in a static out-parameter, not {backing}")
        if space_of(backing) != space_of(t):
            raise VerifyException(
                f"an arena in an out-parameter in {space_of(backing)} memory is in "
                f"{space_of(t)}; it keeps its out-parameter's memory space"
            )
        if self.size > buffer_bytes(backing):
            raise VerifyException(
                f"an arena of {self.size} bytes does not fit in its out-parameter of "
                f"{buffer_bytes(backing)} bytes"
            )

    @property
    def size(self) -> int:
        return self.buffer.type.get_shape()[0]


@irdl_op_definition
class ViewOp(IRDLOperation):
    """`%s = accy.view %arena[512] : memref<1024xi8, S> to memref<4x8xf32, S>`: the buffer
    at byte `offset` of an arena, inside it and aligned as the arena says. A view with
    dynamic dims (`?`, the row count) records the most rows it was planned for
    (`accy.view %arena[0] max_rows 64 : ...`), and lies inside its arena at that many."""

    name = "accy.view"

    arena = operand_def(MemRefType)
    offset = prop_def(IntegerAttr.constr(type=i64))
    max_rows = opt_prop_def(IntegerAttr.constr(type=i64))
    buffer = result_def(MemRefType)

    def __init__(self, arena: SSAValue, offset: int, t: MemRefType, max_rows: int | None = None):
        properties: dict[str, Attribute] = {"offset": IntegerAttr(offset, i64)}
        if max_rows is not None:
            properties["max_rows"] = IntegerAttr(max_rows, i64)
        super().__init__(operands=[arena], result_types=[t], properties=properties)

    @property
    def rows(self) -> int:
        """The rows the view was planned for (0 without dynamic dims)."""
        return self.max_rows.value.data if self.max_rows is not None else 0

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.arena)
        printer.print_string(f"[{self.offset.value.data}]")
        if self.max_rows is not None:
            printer.print_string(f" max_rows {self.max_rows.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.arena.type)
        printer.print_string(" to ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser) -> ViewOp:
        arena = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        offset = parser.parse_integer(allow_negative=False, allow_boolean=False)
        parser.parse_punctuation("]")
        max_rows = None
        if parser.parse_optional_keyword("max_rows") is not None:
            max_rows = parser.parse_integer(allow_negative=False, allow_boolean=False)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        arena_type = parser.parse_type()
        parser.parse_keyword("to")
        t = parser.parse_type()
        if not isinstance(t, MemRefType):
            parser.raise_error(f"a view is a memref, not {t}", pos)
        op = cls(parser.resolve_operand(arena, arena_type), offset, t, max_rows)
        op.attributes |= attributes
        return op

    def verify_(self) -> None:
        owner = self.arena.owner
        if not isinstance(owner, ArenaOp):
            raise VerifyException("views an arena: its operand is an 'accy.arena'")
        t = self.buffer.type
        assert isinstance(t, MemRefType)
        dynamic = any(d < 0 for d in t.get_shape())
        if dynamic and self.max_rows is None:
            raise VerifyException(
                f"a view of dynamic type {t} records the rows it was planned for (max_rows)"
            )
        if not dynamic and self.max_rows is not None:
            raise VerifyException(f"a view of static type {t} takes no max_rows")
        if space_of(t) != space_of(owner.buffer.type):
            raise VerifyException(
                f"views arena memory {space_of(owner.buffer.type)} as {space_of(t)}; a view "
                "keeps its arena's memory space"
            )
        offset, size, alignment = (
            self.offset.value.data,
            buffer_bytes(t, self.rows),
            owner.alignment,
        )
        if offset % alignment.value.data:
            raise VerifyException(
                f"offset {offset} is not a multiple of the arena's alignment {alignment.value.data}"
            )
        if offset + size > owner.size:
            raise VerifyException(
                f"bytes [{offset}, {offset + size}) lie outside the arena of {owner.size} bytes"
            )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """`%s = accy.alloc(%rows) : memref<?x8xf32, S>`: a buffer of its own (one size per
    dynamic dim), freed when the function returns."""

    name = "accy.alloc"

    sizes = var_operand_def(IndexType)
    buffer = result_def(MemRefType)

    assembly_format = "(`(` $sizes^ `)`)? attr-dict `:` type($buffer)"

    def __init__(self, t: MemRefType, sizes: Sequence[SSAValue] = ()):
        super().__init__(operands=[sizes], result_types=[t])

    def verify_(self) -> None:
        dynamic = sum(1 for d in self.buffer.type.get_shape() if d < 0)
        if dynamic != len(self.sizes):
            raise VerifyException(f"has {len(self.sizes)} sizes for {dynamic} dynamic dims")


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """`%c = accy.global dense<...> : tensor<4xf32> : memref<4xf32, #accy.space<device_constant>>`: a
    constant's buffer, holding its data (read-only)."""

    name = "accy.global"

    value = prop_def(DenseIntOrFPElementsAttr)
    buffer = result_def(MemRefType)

    assembly_format = "$value attr-dict `:` type($buffer)"

    def __init__(self, value: DenseIntOrFPElementsAttr, space: MemorySpace):
        t = value.type
        assert isinstance(t, TensorType)
        super().__init__(result_types=[buffer_type(t, space)], properties={"value": value})

    def verify_(self) -> None:
        t, data = self.buffer.type, self.value.type
        if (t.get_shape(), t.get_element_type()) != (
            data.get_shape(),  # type: ignore[attr-defined]
            data.get_element_type(),  # type: ignore[attr-defined]
        ):
            raise VerifyException(f"holds data of type {data} in a buffer of type {t}")


@irdl_op_definition
class CopyOp(IRDLOperation):
    """`accy.copy %a to %b : memref<4xf32, S> to memref<4xf32, T>`: every element of `a`
    into `b` (a host/device transfer when the spaces differ)."""

    name = "accy.copy"

    source = operand_def(MemRefType)
    target = operand_def(MemRefType)

    assembly_format = "$source `to` $target attr-dict `:` type($source) `to` type($target)"

    def __init__(self, source: SSAValue, target: SSAValue):
        super().__init__(operands=[source, target])

    def verify_(self) -> None:
        a, b = self.source.type, self.target.type
        if (a.get_shape(), a.get_element_type()) != (b.get_shape(), b.get_element_type()):
            raise VerifyException(f"copies {a} into {b}: shapes and element types differ")
        if space_of(b) is MemorySpace.DEVICE_CONSTANT or isinstance(self.target.owner, GlobalOp):
            raise VerifyException("writes a read-only constant buffer")


class WorkKind(str, Enum):
    """The kinds of work a planned program does: each `accy.kernel`'s kind (named after its
    fused group's root; `attention`: a group holding two products, a softmax between them),
    and `iterate`, a host loop (`accy.loop`, `accy.while_loop`)."""

    ELEMENTWISE = "elementwise"
    BROADCAST = "broadcast"
    RESHAPE = "reshape"
    TRANSPOSE = "transpose"
    REDUCE = "reduce"
    SCAN = "scan"
    DOT = "dot"
    SCATTER = "scatter"
    FOLD = "fold"
    SORT = "sort"
    WINDOW = "window"
    CONVOLUTION = "convolution"
    ATTENTION = "attention"
    ITERATE = "iterate"


KERNEL_KINDS = tuple(kind.value for kind in WorkKind if kind is not WorkKind.ITERATE)
"""The kinds an `accy.kernel` may have: the work kinds, but `iterate` (a host loop)."""

IN_PLACE_KINDS = (WorkKind.ELEMENTWISE, WorkKind.SCATTER, WorkKind.DOT)
"""Kernels whose output may take over the buffer of an input it dies at (a dot's: one its
epilogue reads pointwise; every target computes an element's epilogue before writing it)."""

TARGET = "accy.target"
"""The planned module's attribute naming the target it was planned for."""


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One work item over buffers (see the module docstring):

        accy.kernel 3 "reduce" ins(%a : T) outs(%b : U) workspaces(%w : W) {
        ^bb0(%x: tensor<...>):
          ...
          accy.yield %r : tensor<...>
        } {family = "reduce.split", workspace_names = ["partials"]}

    `rows` (optional) is the row count bound to the dynamic dims of the body's tensors."""

    name = "accy.kernel"

    id = prop_def(IntegerAttr.constr(type=i64))
    kind = prop_def(StringAttr)
    family = opt_prop_def(StringAttr)
    workspace_names = opt_prop_def(ArrayAttr[StringAttr])
    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    workspaces = var_operand_def(MemRefType)
    rows = opt_operand_def(IndexType)
    body = region_def("single_block")

    traits = traits_def(EndsWithYield())

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        id: int,
        kind: str,
        ins: Sequence[SSAValue],
        outs: Sequence[SSAValue],
        body: Region,
        *,
        family: str | None = None,
        workspaces: Sequence[tuple[str, SSAValue]] = (),
        rows: SSAValue | None = None,
    ):
        properties: dict[str, Attribute] = {"id": IntegerAttr(id, i64), "kind": StringAttr(kind)}
        if family is not None:
            properties["family"] = StringAttr(family)
        if workspaces:
            properties["workspace_names"] = ArrayAttr([StringAttr(n) for n, _ in workspaces])
        super().__init__(
            operands=[ins, outs, [w for _, w in workspaces], [rows] if rows else []],
            properties=properties,
            regions=[body],
        )

    @property
    def yielded(self) -> tuple[SSAValue, ...]:
        terminator = self.body.block.last_op
        return tuple(terminator.values) if isinstance(terminator, YieldOp) else ()

    def named_workspaces(self) -> dict[str, SSAValue]:
        names = [] if self.workspace_names is None else [n.data for n in self.workspace_names]
        return dict(zip(names, self.workspaces))

    def verify_(self) -> None:
        args = self.body.block.args
        if len(args) != len(self.ins):
            raise VerifyException(f"has {len(self.ins)} ins but its body takes {len(args)} tensors")
        for index, (arg, buffer) in enumerate(zip(args, self.ins)):
            _check_stores(f"body argument #{index}", arg.type, f"ins #{index}", buffer.type)
        terminator = self.body.block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("its body ends in 'accy.yield'")
        if len(terminator.values) != len(self.outs):
            raise VerifyException(
                f"has {len(self.outs)} outs but its body yields {len(terminator.values)} values"
            )
        if not self.outs:
            raise VerifyException("writes no buffer; a kernel stores at least one value (outs)")
        for index, (value, buffer) in enumerate(zip(terminator.values, self.outs)):
            _check_stores(f"yielded value #{index}", value.type, f"outs #{index}", buffer.type)
            if not isinstance(value.owner, Operation) or value.owner.parent is not self.body.block:
                raise VerifyException(
                    f"yielded value #{index} is not computed by its body (a kernel computes "
                    "what it stores; an input passes to an output by an 'accy.copy')"
                )
            if space_of(buffer.type) is MemorySpace.DEVICE_CONSTANT or isinstance(
                buffer.owner, GlobalOp
            ):
                raise VerifyException(f"outs #{index} is a read-only constant buffer")
        for index, buffer in enumerate(self.workspaces):
            if space_of(buffer.type) is MemorySpace.DEVICE_CONSTANT or isinstance(
                buffer.owner, GlobalOp
            ):
                raise VerifyException(f"workspaces #{index} is a read-only constant buffer")
        names = self.workspace_names
        if len(self.workspaces) != (0 if names is None else len(names)):
            raise VerifyException("names each of its workspaces once (workspace_names)")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.id.value.data} ")
        printer.print_string_literal(self.kind.data)

        def group(keyword: str, values: Sequence[SSAValue]) -> None:
            printer.print_string(f" {keyword}(")
            printer.print_list(values, printer.print_operand)
            if values:
                printer.print_string(" : ")
                printer.print_list((v.type for v in values), printer.print_attribute)
            printer.print_string(")")

        group("ins", self.ins)
        group("outs", self.outs)
        if self.workspaces:
            group("workspaces", self.workspaces)
        if self.rows is not None:
            printer.print_string(" rows(")
            printer.print_operand(self.rows)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.body)
        extra = {}
        if self.family is not None:
            extra["family"] = self.family
        if self.workspace_names is not None:
            extra["workspace_names"] = self.workspace_names
        printer.print_op_attributes({**extra, **self.attributes})

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        id = parser.parse_integer(allow_negative=False, allow_boolean=False)
        kind = parser.parse_str_literal()

        def group(keyword: str, required: bool) -> list[SSAValue]:
            if not required and parser.parse_optional_keyword(keyword) is None:
                return []
            if required:
                parser.parse_keyword(keyword)
            parser.parse_punctuation("(")
            operands = []
            if parser.parse_optional_punctuation(")") is not None:
                return []
            operands.append(parser.parse_unresolved_operand())
            while parser.parse_optional_punctuation(",") is not None:
                operands.append(parser.parse_unresolved_operand())
            pos = parser.pos
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            return parser.resolve_operands(operands, types, pos)

        ins = group("ins", True)
        outs = group("outs", True)
        workspaces = group("workspaces", False)
        rows = None
        if parser.parse_optional_keyword("rows") is not None:
            parser.parse_punctuation("(")
            rows = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
            parser.parse_punctuation(")")
        body = parser.parse_region()
        attributes = dict(parser.parse_optional_attr_dict())
        family = attributes.pop("family", None)
        names = attributes.pop("workspace_names", None)
        if family is not None and not isinstance(family, StringAttr):
            parser.raise_error(f"family is a string, not {family}")
        if names is not None and not (
            isinstance(names, ArrayAttr) and all(isinstance(n, StringAttr) for n in names)
        ):
            parser.raise_error(f"workspace_names is an array of strings, not {names}")
        if len(workspaces) != (0 if names is None else len(names)):
            parser.raise_error("name each workspace once (workspace_names)")
        op = cls(
            id,
            kind,
            ins,
            outs,
            body,
            family=None if family is None else family.data,
            workspaces=list(zip([n.data for n in names or []], workspaces)),
            rows=rows,
        )
        op.attributes |= attributes
        return op


def _check_stores(what: str, tensor: Attribute, where: str, buffer: Attribute) -> None:
    """Raise unless `buffer` stores the tensor type `tensor` (same shape and element)."""
    if not (
        isinstance(tensor, TensorType)
        and isinstance(buffer, MemRefType)
        and tensor.get_shape() == buffer.get_shape()
        and tensor.get_element_type() == buffer.get_element_type()
    ):
        raise VerifyException(
            f"{what} of type {tensor} is not what {where} of type {buffer} stores"
        )


@irdl_op_definition
class LoopOp(IRDLOperation):
    """`accy.loop 10 { ... }`: the host loop of an `accy.iterate`, running its body's
    kernels and copies `trip_count` times."""

    name = "accy.loop"

    trip_count = prop_def(IntegerAttr.constr(type=i64))
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = "$trip_count $body attr-dict"

    def __init__(self, trip_count: int, body: Region | None = None):
        super().__init__(
            properties={"trip_count": IntegerAttr(trip_count, i64)},
            regions=[body if body is not None else Region(Block())],
        )


@irdl_op_definition
class WhileLoopOp(IRDLOperation):
    """`accy.while_loop %flag : memref<i1, #accy.space<host>> cond { ... } do { ... }`: the
    host loop of an `accy.while`. It runs `cond`'s kernels and copies, which leave the
    condition in the host buffer `%flag`, reads it and, while it holds, runs `do`'s and
    then `cond`'s again."""

    name = "accy.while_loop"

    flag = operand_def(MemRefType)
    cond = region_def("single_block")
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = "$flag `:` type($flag) `cond` $cond `do` $body attr-dict"

    def __init__(self, flag: SSAValue):
        super().__init__(operands=[flag], regions=[Region(Block()), Region(Block())])

    def verify_(self) -> None:
        t = self.flag.type
        assert isinstance(t, MemRefType)
        if t.get_shape() or space_of(t) is not MemorySpace.HOST:
            raise VerifyException(f"reads its condition from {t}, not a rank-0 host buffer")


PLAN_OPS = (ArenaOp, ViewOp, AllocOp, GlobalOp, CopyOp, KernelOp, LoopOp, WhileLoopOp)
PLAN_ATTRIBUTES = (MemorySpaceAttr,)

__all__ = [
    "OUTPUT",
    "PLANNED",
    "PLAN_ATTRIBUTES",
    "PLAN_OPS",
    "AllocOp",
    "ArenaOp",
    "CopyOp",
    "GlobalOp",
    "KernelOp",
    "LoopOp",
    "MemorySpace",
    "MemorySpaceAttr",
    "ViewOp",
    "WhileLoopOp",
    "buffer_bytes",
    "buffer_type",
    "space_of",
]
