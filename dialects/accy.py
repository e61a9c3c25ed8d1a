"""The accy dialect: tensor programs named after StableHLO.

Every op works on ranked tensors whose element type is one of `f32`, `f16`, `bf16`,
`i1`, `i32` or `i64`; dims are static or dynamic (`?`). Functions are `func.func` with
`func.return`. The custom syntax of each op is part of the product (users and tests write
it); every op also round-trips in MLIR's generic form.

Shape rules are checked by each op's verifier with a message that names the op, what was
expected and what was found. A dynamic dim is compatible with any size.

A parameter may carry the argument attribute `accy.donated` (`DONATED`): the caller gives its
buffer up, so the function may overwrite it once the parameter has been read.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
    AttrConstraint,
    AttrSizedOperandSegments,
    EqAttrConstraint,
    IRDLOperation,
    ParamAttrConstraint,
    VarConstraint,
    VerificationContext,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsTerminator,
    NoMemoryEffect,
    OpTrait,
    Pure,
    SingleBlockImplicitTerminator,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

# ---------------------------------------------------------------------------------------
# Traits
# ---------------------------------------------------------------------------------------


class EndsWithYield(OpTrait):
    """Marks an op whose regions end with `accy.yield` (the loops, the combiners' bodies,
    and the planned form's `accy.kernel`)."""


YIELD_PARENT_NAMES = (
    "accy.iterate",
    "accy.while",
    "accy.scatter",
    "accy.fold",
    "accy.sort",
    "accy.reduce_window",
    "accy.select_and_scatter",
    "accy.kernel",
)
"""The ops that end their regions with `accy.yield` (`EndsWithYield`), for messages."""


@dataclass(frozen=True)
class YieldParent(OpTrait):
    """The op's parent ends its regions with it (has `EndsWithYield`)."""

    def verify(self, op: Operation) -> None:
        parent = op.parent_op()
        if parent is None or not parent.has_trait(EndsWithYield):
            names = ", ".join(f"'{n}'" for n in YIELD_PARENT_NAMES)
            raise VerifyException(f"'{op.name}' expects parent op to be one of {names}")


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------

INTEGER_TYPES = (
    *(IntegerType(width) for width in (1, 8, 16, 32, 64)),
    *(IntegerType(width, Signedness.UNSIGNED) for width in (8, 16, 32, 64)),
)
"""i1, the signless integers (two's complement: signed where an op needs a sign) and the
unsigned ones."""


@dataclass(frozen=True)
class IntegerElementConstraint(AttrConstraint[IntegerType]):
    """One of `INTEGER_TYPES` (an `AnyOf` holds one constraint per attribute class)."""

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if attr not in INTEGER_TYPES:
            raise VerifyException(f"{attr} is not an integer type accy computes with")

    def get_bases(self) -> set[type[Attribute]]:
        return {IntegerType}

    def mapping_type_vars(self, type_var_mapping) -> IntegerElementConstraint:
        return self


ElementType = AnyOf(
    [
        EqAttrConstraint(Float64Type()),
        EqAttrConstraint(Float32Type()),
        EqAttrConstraint(Float16Type()),
        EqAttrConstraint(BFloat16Type()),
        IntegerElementConstraint(),
    ]
)
"""The element types accy computes with."""

AccyTensor = TensorType.constr(ElementType)
"""A ranked tensor of an accy element type."""

ELEMENT_TYPE_NAMES = ", ".join(
    str(t) for t in (Float64Type(), Float32Type(), Float16Type(), BFloat16Type(), *INTEGER_TYPES)
)
"""The element types accy computes with, as diagnostics list them."""

FLOAT_TYPES = (Float64Type, Float32Type, Float16Type, BFloat16Type)


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, FLOAT_TYPES)


def is_bool(element_type: Attribute) -> bool:
    return isinstance(element_type, IntegerType) and element_type.width.data == 1


def format_dim(dim: int) -> str:
    return "?" if dim == DYNAMIC_INDEX else str(dim)


def dims_compatible(left: int, right: int) -> bool:
    """Two dims agree when they are equal or either is dynamic."""
    return left == right or DYNAMIC_INDEX in (left, right)


def shapes_compatible(left: Sequence[int], right: Sequence[int]) -> bool:
    return len(left) == len(right) and all(map(dims_compatible, left, right))


def format_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(format_dim(d) for d in shape) + "]"


# ---------------------------------------------------------------------------------------
# Enum attributes
# ---------------------------------------------------------------------------------------


class ComparisonDirection(StrEnum):
    EQ = "EQ"
    NE = "NE"
    LT = "LT"
    LE = "LE"
    GT = "GT"
    GE = "GE"


@irdl_attr_definition
class ComparisonDirectionAttr(EnumAttribute[ComparisonDirection], SpacedOpaqueSyntaxAttribute):
    """The predicate of `accy.compare`, printed bare (`LT`) in the custom syntax."""

    name = "accy.comparison_direction"


class CombinerKind(StrEnum):
    """How `accy.reduce` and `accy.scan` combine two elements."""

    ADD = "add"
    MAX = "max"
    MIN = "min"
    MUL = "mul"


@irdl_attr_definition
class CombinerKindAttr(EnumAttribute[CombinerKind], SpacedOpaqueSyntaxAttribute):
    name = "accy.combiner"


# ---------------------------------------------------------------------------------------
# Custom directives: dim lists as `[1, 0]` and dim pairs as `[0] x [0]`
# ---------------------------------------------------------------------------------------


def _parse_i64(parser: Parser, allow_negative: bool = True) -> int:
    """An integer literal that fits in i64 (a located parse error otherwise)."""
    position = parser.pos
    value = parser.parse_integer(allow_negative=allow_negative, allow_boolean=False)
    if not -(2**63) <= value < 2**63:
        parser.raise_error(f"integer {value} does not fit in i64", position, parser.pos)
    return value


def _parse_dim_list(parser: Parser) -> DenseArrayBase:
    values = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, lambda: _parse_i64(parser))
    return DenseArrayBase.from_list(i64, values)


def _print_dim_list(printer: Printer, dims: Attribute) -> None:
    assert isinstance(dims, DenseArrayBase)
    printer.print_string("[" + ", ".join(str(d) for d in dims.get_values()) + "]")


@irdl_custom_directive
class DimList(CustomDirective):
    """`[d0, d1, ...]`: a list of dimension numbers stored as `array<i64: ...>`."""

    dims: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> bool:
        self.dims.set(state, _parse_dim_list(parser))
        return True

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        _print_dim_list(printer, self.dims.get(op))
        state.should_emit_space = True
        state.last_was_punctuation = False


@irdl_custom_directive
class DimPair(CustomDirective):
    """`[l0, ...] x [r0, ...]`: matching dimension lists of the two dot operands."""

    lhs: AttributeVariable
    rhs: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> bool:
        self.lhs.set(state, _parse_dim_list(parser))
        parser.parse_keyword("x")
        self.rhs.set(state, _parse_dim_list(parser))
        return True

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        _print_dim_list(printer, self.lhs.get(op))
        printer.print_string(" x ")
        _print_dim_list(printer, self.rhs.get(op))
        state.should_emit_space = True
        state.last_was_punctuation = False


def _dims_of(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


# ---------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------


class AccyOperation(IRDLOperation, abc.ABC):
    """An accy op; `error` raises a VerifyException whose text names the op."""

    def error(self, message: str) -> VerifyException:
        return VerifyException(f"'{self.name}' op {message}")


class ElementwiseBinaryOperation(AccyOperation, abc.ABC):
    """`%r = accy.OP %lhs, %rhs : T` with both operands and the result of type T."""

    T: ClassVar = VarConstraint("T", AccyTensor)

    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        element = self.result.type.get_element_type()
        if is_bool(element):
            raise self.error("does not compute on i1 tensors")


class ElementwiseUnaryOperation(AccyOperation, abc.ABC):
    """`%r = accy.OP %operand : T` with the operand and the result of type T."""

    T: ClassVar = VarConstraint("T", AccyTensor)
    FLOAT_ONLY: ClassVar[bool] = False

    operand = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$operand attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue):
        super().__init__(operands=[operand], result_types=[operand.type])

    def verify_(self) -> None:
        element = self.result.type.get_element_type()
        if is_bool(element) or (self.FLOAT_ONLY and not is_float(element)):
            kind = "floating-point" if self.FLOAT_ONLY else "numeric"
            raise self.error(f"expects a {kind} element type, got {element}")


def _verify_bitwise(op: AccyOperation) -> None:
    """Raise unless `op`'s result holds integers or i1 (bitwise ops refuse floats)."""
    element = op.result.type.get_element_type()
    if is_float(element):
        raise op.error(f"expects an integer or i1 element type, got {element}")


class BitwiseBinaryOperation(ElementwiseBinaryOperation, abc.ABC):
    """A bitwise op of two integer or i1 tensors (logical on i1)."""

    def verify_(self) -> None:
        _verify_bitwise(self)


class FloatUnaryOperation(ElementwiseUnaryOperation, abc.ABC):
    FLOAT_ONLY: ClassVar[bool] = True


def _verify_integer(op: AccyOperation) -> None:
    """Raise unless `op`'s result holds integers (not floats, not i1)."""
    element = op.result.type.get_element_type()
    if is_float(element) or is_bool(element):
        raise op.error(f"expects an integer element type, got {element}")


class IntegerBinaryOperation(ElementwiseBinaryOperation, abc.ABC):
    """An elementwise op of two integer tensors (shifts)."""

    def verify_(self) -> None:
        _verify_integer(self)


class IntegerUnaryOperation(ElementwiseUnaryOperation, abc.ABC):
    """An elementwise op of an integer tensor (bit counts)."""

    def verify_(self) -> None:
        _verify_integer(self)


class TensorCastOperation(AccyOperation, abc.ABC):
    """`%r = accy.OP %operand : (T) -> U`: one operand and a result of a type given to the
    builder; each op's `verify_` says how T and U must relate."""

    operand = operand_def(AccyTensor)
    result = result_def(AccyTensor)

    traits = traits_def(Pure())

    assembly_format = "$operand attr-dict `:` functional-type(operands, results)"

    def __init__(self, operand: SSAValue, result_type: TensorType):
        super().__init__(operands=[operand], result_types=[result_type])

    def verify_same_shape(self) -> None:
        source, result = self.operand.type.get_shape(), self.result.type.get_shape()
        if not shapes_compatible(source, result):
            raise self.error(
                f"result shape {format_shape(result)} differs from operand shape "
                f"{format_shape(source)}"
            )


# ---------------------------------------------------------------------------------------
# Elementwise ops
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class AddOp(ElementwiseBinaryOperation):
    name = "accy.add"


@irdl_op_definition
class SubtractOp(ElementwiseBinaryOperation):
    name = "accy.subtract"


@irdl_op_definition
class MultiplyOp(ElementwiseBinaryOperation):
    name = "accy.multiply"


@irdl_op_definition
class DivideOp(ElementwiseBinaryOperation):
    name = "accy.divide"


@irdl_op_definition
class MaximumOp(ElementwiseBinaryOperation):
    name = "accy.maximum"


@irdl_op_definition
class MinimumOp(ElementwiseBinaryOperation):
    name = "accy.minimum"


@irdl_op_definition
class PowerOp(ElementwiseBinaryOperation):
    name = "accy.power"


@irdl_op_definition
class AndOp(BitwiseBinaryOperation):
    name = "accy.and"


@irdl_op_definition
class OrOp(BitwiseBinaryOperation):
    name = "accy.or"


@irdl_op_definition
class XorOp(BitwiseBinaryOperation):
    name = "accy.xor"


@irdl_op_definition
class NotOp(ElementwiseUnaryOperation):
    """Bitwise complement of an integer tensor; logical not of an i1 tensor."""

    name = "accy.not"

    def verify_(self) -> None:
        _verify_bitwise(self)


@irdl_op_definition
class NegateOp(ElementwiseUnaryOperation):
    name = "accy.negate"


@irdl_op_definition
class AbsOp(ElementwiseUnaryOperation):
    name = "accy.abs"


@irdl_op_definition
class ExponentialOp(FloatUnaryOperation):
    name = "accy.exponential"


@irdl_op_definition
class LogOp(FloatUnaryOperation):
    name = "accy.log"


@irdl_op_definition
class TanhOp(FloatUnaryOperation):
    name = "accy.tanh"


@irdl_op_definition
class SqrtOp(FloatUnaryOperation):
    name = "accy.sqrt"


@irdl_op_definition
class RsqrtOp(FloatUnaryOperation):
    name = "accy.rsqrt"


@irdl_op_definition
class RemainderOp(ElementwiseBinaryOperation):
    """The remainder of truncating division: the sign of the dividend (C's fmod); an
    integer remainder by 0 is the dividend, MIN % -1 is 0."""

    name = "accy.remainder"


@irdl_op_definition
class ShiftLeftOp(IntegerBinaryOperation):
    """`lhs << rhs`; 0 where rhs is outside [0, bit width)."""

    name = "accy.shift_left"


@irdl_op_definition
class ShiftRightArithmeticOp(IntegerBinaryOperation):
    """`lhs >> rhs` filling with the sign bit; all sign bits where rhs is outside
    [0, bit width)."""

    name = "accy.shift_right_arithmetic"


@irdl_op_definition
class ShiftRightLogicalOp(IntegerBinaryOperation):
    """`lhs >> rhs` filling with zeros; 0 where rhs is outside [0, bit width)."""

    name = "accy.shift_right_logical"


@irdl_op_definition
class SignOp(ElementwiseUnaryOperation):
    """-1, 0 or 1 by the operand's sign; a float zero or NaN is itself."""

    name = "accy.sign"


@irdl_op_definition
class PopcntOp(IntegerUnaryOperation):
    """The number of set bits."""

    name = "accy.popcnt"


@irdl_op_definition
class CountLeadingZerosOp(IntegerUnaryOperation):
    """The number of zero bits above the highest set bit (the bit width for 0)."""

    name = "accy.count_leading_zeros"


@irdl_op_definition
class RoundNearestEvenOp(FloatUnaryOperation):
    """Rounds to the nearest integer, ties to even."""

    name = "accy.round_nearest_even"


@irdl_op_definition
class RoundNearestAfzOp(FloatUnaryOperation):
    """Rounds to the nearest integer, ties away from zero."""

    name = "accy.round_nearest_afz"


@irdl_op_definition
class IsFiniteOp(AccyOperation):
    """`%r = accy.is_finite %x : (tensor<...xf32>) -> tensor<...xi1>`: neither infinite
    nor NaN."""

    name = "accy.is_finite"

    operand = operand_def(AccyTensor)
    result = result_def(AccyTensor)

    traits = traits_def(Pure())

    assembly_format = "$operand attr-dict `:` functional-type(operands, results)"

    def __init__(self, operand: SSAValue):
        assert isinstance(operand.type, TensorType)
        result = TensorType(IntegerType(1), operand.type.get_shape())
        super().__init__(operands=[operand], result_types=[result])

    def verify_(self) -> None:
        element = self.operand.type.get_element_type()
        if not is_float(element):
            raise self.error(f"expects a floating-point operand, got {element}")
        result = self.result.type
        if not is_bool(result.get_element_type()) or not shapes_compatible(
            result.get_shape(), self.operand.type.get_shape()
        ):
            raise self.error(f"result must be i1 of the operand's shape, got {result}")


@irdl_op_definition
class SineOp(FloatUnaryOperation):
    name = "accy.sine"


@irdl_op_definition
class CosineOp(FloatUnaryOperation):
    name = "accy.cosine"


@irdl_op_definition
class TanOp(FloatUnaryOperation):
    name = "accy.tan"


@irdl_op_definition
class CbrtOp(FloatUnaryOperation):
    """The real cube root (negative for a negative operand)."""

    name = "accy.cbrt"


@irdl_op_definition
class LogPlusOneOp(FloatUnaryOperation):
    """log(1 + x), accurate near 0."""

    name = "accy.log_plus_one"


@irdl_op_definition
class ExponentialMinusOneOp(FloatUnaryOperation):
    """exp(x) - 1, accurate near 0."""

    name = "accy.exponential_minus_one"


class FloatBinaryOperation(ElementwiseBinaryOperation, abc.ABC):
    """An elementwise op of two floating-point tensors."""

    def verify_(self) -> None:
        element = self.result.type.get_element_type()
        if not is_float(element):
            raise self.error(f"expects a floating-point element type, got {element}")


@irdl_op_definition
class Atan2Op(FloatBinaryOperation):
    """The angle of the point (rhs, lhs): atan(lhs / rhs) in the quadrant of their signs."""

    name = "accy.atan2"


@irdl_op_definition
class FloorOp(FloatUnaryOperation):
    """Rounds toward -inf."""

    name = "accy.floor"


@irdl_op_definition
class CeilOp(FloatUnaryOperation):
    """Rounds toward +inf."""

    name = "accy.ceil"


@irdl_op_definition
class LogisticOp(FloatUnaryOperation):
    name = "accy.logistic"


@irdl_op_definition
class CompareOp(AccyOperation):
    """`%r = accy.compare LT, %a, %b (total_order)? : (T, T) -> tensor<...xi1>`.

    Floats compare as IEEE numbers (every comparison but NE false on NaN) or, with
    `total_order`, in StableHLO's TOTALORDER: -NaN < -Inf < ... < -0 < +0 < ... < +Inf <
    +NaN (the bit patterns as sign-magnitude integers)."""

    name = "accy.compare"

    T: ClassVar = VarConstraint("T", AccyTensor)

    direction = prop_def(ComparisonDirectionAttr)
    total_order = opt_prop_def(UnitAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(AccyTensor)

    traits = traits_def(Pure())

    assembly_format = (
        "$direction `,` $lhs `,` $rhs (`total_order` $total_order^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        direction: ComparisonDirection,
        lhs: SSAValue,
        rhs: SSAValue,
        *,
        total_order: bool = False,
    ):
        assert isinstance(lhs.type, TensorType)
        result = TensorType(IntegerType(1), lhs.type.get_shape())
        properties: dict[str, Attribute] = {"direction": ComparisonDirectionAttr(direction)}
        if total_order:
            properties["total_order"] = UnitAttr()
        super().__init__(operands=[lhs, rhs], result_types=[result], properties=properties)

    def verify_(self) -> None:
        result = self.result.type
        if not is_bool(result.get_element_type()):
            raise self.error(f"result must have element type i1, got {result}")
        element = self.lhs.type.get_element_type()
        if self.total_order is not None and not is_float(element):
            raise self.error(f"total_order compares floats, not {element}")
        if not shapes_compatible(result.get_shape(), self.lhs.type.get_shape()):
            raise self.error(
                f"result shape {format_shape(result.get_shape())} differs from operand "
                f"shape {format_shape(self.lhs.type.get_shape())}"
            )


@irdl_op_definition
class SelectOp(AccyOperation):
    """`%r = accy.select %pred, %on_true, %on_false : tensor<...xi1>, T`."""

    name = "accy.select"

    T: ClassVar = VarConstraint("T", AccyTensor)

    pred = operand_def(AccyTensor)
    on_true = operand_def(T)
    on_false = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$pred `,` $on_true `,` $on_false attr-dict `:` type($pred) `,` type($result)"

    def __init__(self, pred: SSAValue, on_true: SSAValue, on_false: SSAValue):
        super().__init__(operands=[pred, on_true, on_false], result_types=[on_true.type])

    def verify_(self) -> None:
        pred = self.pred.type
        if not is_bool(pred.get_element_type()):
            raise self.error(f"predicate must have element type i1, got {pred}")
        if not shapes_compatible(pred.get_shape(), self.result.type.get_shape()):
            raise self.error(
                f"predicate shape {format_shape(pred.get_shape())} differs from result "
                f"shape {format_shape(self.result.type.get_shape())}"
            )


@irdl_op_definition
class ConvertOp(TensorCastOperation):
    """`%r = accy.convert %x : (tensor<4xf32>) -> tensor<4xi32>`: same shape, new element type."""

    name = "accy.convert"

    def verify_(self) -> None:
        self.verify_same_shape()


@irdl_op_definition
class BitcastConvertOp(TensorCastOperation):
    """`%r = accy.bitcast_convert %x : (tensor<4xf32>) -> tensor<4xi32>`: each element's
    bits read as another element type of the same bit width (same shape)."""

    name = "accy.bitcast_convert"

    def verify_(self) -> None:
        self.verify_same_shape()
        a = self.operand.type.get_element_type()
        r = self.result.type.get_element_type()
        if a.bitwidth != r.bitwidth or (a.bitwidth == 1) != (r.bitwidth == 1):
            raise self.error(
                f"bitcasts {a} ({a.bitwidth} bits) to {r} ({r.bitwidth} bits); "
                "the element types must have the same bit width"
            )


# ---------------------------------------------------------------------------------------
# Constants and data movement
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(AccyOperation):
    """`%c = accy.constant dense<[1.0, 2.0]> : tensor<2xf32>`."""

    name = "accy.constant"

    T: ClassVar = VarConstraint("T", AccyTensor)

    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr())))
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$value attr-dict"

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    def verify_(self) -> None:
        if not self.result.type.has_static_shape():
            raise self.error("result must have a static shape")


@irdl_op_definition
class BroadcastInDimOp(AccyOperation):
    """`%r = accy.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>`.

    Operand dim `i` maps to result dim `dims[i]`; it has the same size there or size 1.
    """

    name = "accy.broadcast_in_dim"

    operand = operand_def(AccyTensor)
    broadcast_dimensions = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$operand `,` `dims` `=` custom<DimList>($broadcast_dimensions) attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, operand: SSAValue, result_type: TensorType, dims: Sequence[int]):
        super().__init__(
            operands=[operand],
            result_types=[result_type],
            properties={"broadcast_dimensions": DenseArrayBase.from_list(i64, dims)},
        )

    def verify_(self) -> None:
        source, result = self.operand.type, self.result.type
        dims = _dims_of(self.broadcast_dimensions)
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")
        if len(dims) != source.get_num_dims():
            raise self.error(
                f"has {len(dims)} broadcast dims for an operand of rank {source.get_num_dims()}"
            )
        if len(set(dims)) != len(dims):
            raise self.error(f"broadcast dims {list(dims)} repeat a dim")
        for index, (dim, size) in enumerate(zip(dims, source.get_shape())):
            if not 0 <= dim < result.get_num_dims():
                raise self.error(
                    f"broadcast dim {dim} is out of range for a result of rank "
                    f"{result.get_num_dims()}"
                )
            target = result.get_shape()[dim]
            if size != 1 and not dims_compatible(size, target):
                raise self.error(
                    f"operand dim {index} of size {format_dim(size)} cannot broadcast to "
                    f"result dim {dim} of size {format_dim(target)}"
                )


@irdl_op_definition
class ReshapeOp(TensorCastOperation):
    """`%r = accy.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>`: same elements, new shape."""

    name = "accy.reshape"

    def verify_(self) -> None:
        source, result = self.operand.type, self.result.type
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")
        if source.has_static_shape() and result.has_static_shape():
            count = source.element_count()
            if count != result.element_count():
                raise self.error(
                    f"cannot reshape {count} elements {format_shape(source.get_shape())} "
                    f"into {result.element_count()} elements "
                    f"{format_shape(result.get_shape())}"
                )


@irdl_op_definition
class TransposeOp(AccyOperation):
    """`%r = accy.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>`.

    Result dim `i` is operand dim `dims[i]`.
    """

    name = "accy.transpose"

    operand = operand_def(AccyTensor)
    permutation = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$operand `,` `dims` `=` custom<DimList>($permutation) attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, operand: SSAValue, permutation: Sequence[int], result_type: TensorType):
        super().__init__(
            operands=[operand],
            result_types=[result_type],
            properties={"permutation": DenseArrayBase.from_list(i64, permutation)},
        )

    def verify_(self) -> None:
        source, result = self.operand.type, self.result.type
        permutation = _dims_of(self.permutation)
        if sorted(permutation) != list(range(source.get_num_dims())):
            raise self.error(
                f"dims {list(permutation)} are not a permutation of the operand's "
                f"{source.get_num_dims()} dims"
            )
        expected = [source.get_shape()[d] for d in permutation]
        if not shapes_compatible(expected, result.get_shape()):
            raise self.error(
                f"result shape {format_shape(result.get_shape())} differs from the "
                f"permuted shape {format_shape(expected)}"
            )
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")


@irdl_op_definition
class ReverseOp(AccyOperation):
    """`%r = accy.reverse %x, dims = [0] : tensor<2x3xf32>`.

    Result element `i` is operand element `i` with the index along each of `dims` mirrored
    (`size - 1 - i`); `dims` are distinct operand dims.
    """

    name = "accy.reverse"

    T: ClassVar = VarConstraint("T", AccyTensor)
    operand = operand_def(T)
    dimensions = prop_def(DenseArrayBase.constr(i64))
    result = result_def(T)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$operand `,` `dims` `=` custom<DimList>($dimensions) attr-dict `:` type($result)"
    )

    def __init__(self, operand: SSAValue, dimensions: Sequence[int]):
        super().__init__(
            operands=[operand],
            result_types=[operand.type],
            properties={"dimensions": DenseArrayBase.from_list(i64, dimensions)},
        )

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(_dims_of(self.dimensions))

    def verify_(self) -> None:
        dims = self.dims
        rank = self.operand.type.get_num_dims()
        if len(set(dims)) != len(dims) or any(d < 0 or d >= rank for d in dims):
            raise self.error(
                f"dims {list(dims)} are not distinct dims of the operand's {rank} dims"
            )


def padded_size(size: int, low: int, high: int, interior: int) -> int:
    """The size of a padded dim (`size` dynamic: dynamic)."""
    if size == DYNAMIC_INDEX:
        return DYNAMIC_INDEX
    return low + high + size + max(size - 1, 0) * interior


@irdl_op_definition
class PadOp(AccyOperation):
    """`%r = accy.pad %x, %v, low = [1, 0], high = [0, -1], interior = [0, 2] :
    (tensor<2x3xf32>, tensor<f32>) -> tensor<3x6xf32>`.

    Along dim `d`, `interior[d]` elements of the padding value `%v` (a rank-0 tensor of the
    element type) go between neighbours, `low[d]` before and `high[d]` after (a negative
    edge crops instead): result size `low + high + size + (size - 1) * interior`.
    """

    name = "accy.pad"

    operand = operand_def(AccyTensor)
    padding_value = operand_def(AccyTensor)
    low = prop_def(DenseArrayBase.constr(i64))
    high = prop_def(DenseArrayBase.constr(i64))
    interior = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$operand `,` $padding_value `,` `low` `=` custom<DimList>($low) `,` `high` `=` "
        "custom<DimList>($high) `,` `interior` `=` custom<DimList>($interior) attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        operand: SSAValue,
        padding_value: SSAValue,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[operand, padding_value],
            result_types=[result_type],
            properties={
                "low": DenseArrayBase.from_list(i64, low),
                "high": DenseArrayBase.from_list(i64, high),
                "interior": DenseArrayBase.from_list(i64, interior),
            },
        )

    @property
    def edges(self) -> tuple[tuple[int, int, int], ...]:
        """`(low, high, interior)` per dim."""
        return tuple(zip(_dims_of(self.low), _dims_of(self.high), _dims_of(self.interior)))

    def verify_(self) -> None:
        source, value, result = self.operand.type, self.padding_value.type, self.result.type
        rank = source.get_num_dims()
        counts = [len(_dims_of(a)) for a in (self.low, self.high, self.interior)]
        if counts != [rank] * 3:
            raise self.error(
                f"expects low, high and interior for each of the operand's {rank} dims, got "
                f"{counts[0]}, {counts[1]} and {counts[2]}"
            )
        if value.get_num_dims() != 0 or value.get_element_type() != source.get_element_type():
            raise self.error(
                f"padding value {value} is not a rank-0 tensor of the operand's element type"
            )
        edges = self.edges
        if any(interior < 0 for _, _, interior in edges):
            raise self.error(f"interior padding {[e[2] for e in edges]} is negative")
        expected = [padded_size(n, *edge) for n, edge in zip(source.get_shape(), edges)]
        if any(n != DYNAMIC_INDEX and n < 0 for n in expected):
            raise self.error(f"padding gives a negative size {format_shape(expected)}")
        if not shapes_compatible(expected, result.get_shape()):
            raise self.error(
                f"result shape {format_shape(result.get_shape())} differs from the padded "
                f"shape {format_shape(expected)}"
            )
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")


@irdl_op_definition
class DynamicSliceOp(AccyOperation):
    """`%r = accy.dynamic_slice %x[%i, %j], sizes = [2, 2] : (tensor<4x3xf32>, tensor<i64>,
    tensor<i64>) -> tensor<2x2xf32>`.

    The `sizes` block of `%x` starting at the run-time indices (one rank-0 integer tensor
    per dim), each start clamped into `[0, size - sizes[d]]` as StableHLO specifies.
    """

    name = "accy.dynamic_slice"

    operand = operand_def(AccyTensor)
    start_indices = var_operand_def(AccyTensor)
    slice_sizes = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$operand `[` $start_indices `]` `,` `sizes` `=` custom<DimList>($slice_sizes) "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        operand: SSAValue,
        start_indices: Sequence[SSAValue],
        slice_sizes: Sequence[int],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[operand, list(start_indices)],
            result_types=[result_type],
            properties={"slice_sizes": DenseArrayBase.from_list(i64, slice_sizes)},
        )

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(_dims_of(self.slice_sizes))

    def verify_(self) -> None:
        source, result = self.operand.type, self.result.type
        rank, sizes = source.get_num_dims(), self.sizes
        if len(self.start_indices) != rank or len(sizes) != rank:
            raise self.error(
                f"expects a start index and a size for each of the operand's {rank} dims, got "
                f"{len(self.start_indices)} and {len(sizes)}"
            )
        _check_start_indices(self, self.start_indices)
        for d, (size, extent) in enumerate(zip(sizes, source.get_shape())):
            if size < 0 or (extent != DYNAMIC_INDEX and size > extent):
                raise self.error(f"size {size} of dim {d} is not within its extent {extent}")
        if tuple(result.get_shape()) != sizes:
            raise self.error(
                f"result shape {format_shape(result.get_shape())} differs from the sizes "
                f"{format_shape(sizes)}"
            )
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")


@irdl_op_definition
class DynamicUpdateSliceOp(AccyOperation):
    """`%r = accy.dynamic_update_slice %x, %u[%i, %j] : (tensor<4x4xf32>, tensor<2x3xf32>,
    tensor<i64>, tensor<i64>) -> tensor<4x4xf32>`.

    `%x` with the block `%u` written at the run-time indices (one rank-0 integer tensor per
    dim), each start clamped into `[0, size - update size]` as StableHLO specifies.
    """

    name = "accy.dynamic_update_slice"

    T: ClassVar = VarConstraint("T", AccyTensor)
    operand = operand_def(T)
    update = operand_def(AccyTensor)
    start_indices = var_operand_def(AccyTensor)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$operand `,` $update `[` $start_indices `]` attr-dict `:` functional-type(operands, results)"

    def __init__(self, operand: SSAValue, update: SSAValue, start_indices: Sequence[SSAValue]):
        super().__init__(
            operands=[operand, update, list(start_indices)], result_types=[operand.type]
        )

    def verify_(self) -> None:
        source, update = self.operand.type, self.update.type
        rank = source.get_num_dims()
        if update.get_num_dims() != rank or len(self.start_indices) != rank:
            raise self.error(
                f"expects an update of the operand's rank {rank} and a start index per dim, got "
                f"rank {update.get_num_dims()} and {len(self.start_indices)} start indices"
            )
        _check_start_indices(self, self.start_indices)
        for d, (size, extent) in enumerate(zip(update.get_shape(), source.get_shape())):
            if size == DYNAMIC_INDEX or (extent != DYNAMIC_INDEX and size > extent):
                raise self.error(
                    f"update dim {d} of size {format_dim(size)} does not fit the operand's {format_dim(extent)}"
                )
        if update.get_element_type() != source.get_element_type():
            raise self.error("operand and update element types differ")


def gather_shape(
    indices_shape: Sequence[int],
    offset_dims: Sequence[int],
    collapsed_slice_dims: Sequence[int],
    operand_batching_dims: Sequence[int],
    index_vector_dim: int,
    slice_sizes: Sequence[int],
) -> list[int]:
    """A gather's result shape: the batch dims (the indices' dims but `index_vector_dim`)
    in order, with the kept slice sizes (`slice_sizes` but the collapsed and batching
    dims) placed at `offset_dims`."""
    batch = [n for d, n in enumerate(indices_shape) if d != index_vector_dim]
    dropped = set(collapsed_slice_dims) | set(operand_batching_dims)
    offsets = [n for d, n in enumerate(slice_sizes) if d not in dropped]
    rank = len(batch) + len(offsets)
    positions = set(offset_dims)
    if len(positions) != len(offsets) or not positions <= set(range(rank)):
        return batch + offsets  # inconsistent numbers: the verifier reports them
    batch_sizes, offset_sizes = iter(batch), iter(offsets)
    return [next(offset_sizes) if d in positions else next(batch_sizes) for d in range(rank)]


@irdl_op_definition
class GatherOp(AccyOperation):
    """`%r = accy.gather %x[%i], offset_dims = [1], collapsed_slice_dims = [0],
    operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0],
    index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<10x4xf32>, tensor<3x1xi32>) ->
    tensor<3x4xf32>` (rows 3 of a 10x4 table: an embedding lookup).

    StableHLO's gather: for each batch index (the result dims not in `offset_dims`), the
    start index vector read from `%i` along `index_vector_dim` places a `slice_sizes`
    block of `%x` (`start_index_map` names the operand dim of each component, clamped so
    that the block lies inside `%x`; an operand batching dim follows the paired indices
    dim); the block's dims but the collapsed and batching ones are the result's
    `offset_dims`.
    """

    name = "accy.gather"

    operand = operand_def(AccyTensor)
    start_indices = operand_def(AccyTensor)
    offset_dims = prop_def(DenseArrayBase.constr(i64))
    collapsed_slice_dims = prop_def(DenseArrayBase.constr(i64))
    operand_batching_dims = prop_def(DenseArrayBase.constr(i64))
    start_indices_batching_dims = prop_def(DenseArrayBase.constr(i64))
    start_index_map = prop_def(DenseArrayBase.constr(i64))
    index_vector_dim = prop_def(IntegerAttr.constr(type=i64))
    slice_sizes = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$operand `[` $start_indices `]` `,` `offset_dims` `=` custom<DimList>($offset_dims) "
        "`,` `collapsed_slice_dims` `=` custom<DimList>($collapsed_slice_dims) `,` "
        "`operand_batching_dims` `=` custom<DimList>($operand_batching_dims) `,` "
        "`start_indices_batching_dims` `=` custom<DimList>($start_indices_batching_dims) `,` "
        "`start_index_map` `=` custom<DimList>($start_index_map) `,` `index_vector_dim` `=` "
        "$index_vector_dim `,` `slice_sizes` `=` custom<DimList>($slice_sizes) attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        operand: SSAValue,
        start_indices: SSAValue,
        *,
        offset_dims: Sequence[int],
        collapsed_slice_dims: Sequence[int],
        operand_batching_dims: Sequence[int] = (),
        start_indices_batching_dims: Sequence[int] = (),
        start_index_map: Sequence[int],
        index_vector_dim: int,
        slice_sizes: Sequence[int],
        result_type: TensorType,
    ):
        lists = {
            "offset_dims": offset_dims,
            "collapsed_slice_dims": collapsed_slice_dims,
            "operand_batching_dims": operand_batching_dims,
            "start_indices_batching_dims": start_indices_batching_dims,
            "start_index_map": start_index_map,
            "slice_sizes": slice_sizes,
        }
        properties: dict[str, Attribute] = {
            name: DenseArrayBase.from_list(i64, list(values)) for name, values in lists.items()
        }
        properties["index_vector_dim"] = IntegerAttr(index_vector_dim, i64)
        super().__init__(
            operands=[operand, start_indices], result_types=[result_type], properties=properties
        )

    def dims(self, name: str) -> tuple[int, ...]:
        """One of the dimension-number lists, by property name."""
        return _dims_of(getattr(self, name))

    @property
    def vector_dim(self) -> int:
        return self.index_vector_dim.value.data

    @property
    def sizes(self) -> tuple[int, ...]:
        return _dims_of(self.slice_sizes)

    def verify_(self) -> None:
        source, indices, result = self.operand.type, self.start_indices.type, self.result.type
        rank, index_rank = source.get_num_dims(), indices.get_num_dims()
        if not isinstance(indices.get_element_type(), IntegerType) or is_bool(
            indices.get_element_type()
        ):
            raise self.error(f"start indices {indices} are not a tensor of integers")
        vector_dim = self.vector_dim
        if not 0 <= vector_dim <= index_rank:
            raise self.error(
                f"index_vector_dim {vector_dim} is not within the start indices' {index_rank} dims"
            )
        if vector_dim < index_rank and indices.get_shape()[vector_dim] == DYNAMIC_INDEX:
            raise self.error("the start indices' index vector dim must have a static size")
        sizes = self.sizes
        if len(sizes) != rank:
            raise self.error(
                f"expects a slice size for each of the operand's {rank} dims, got {len(sizes)}"
            )
        for d, (size, extent) in enumerate(zip(sizes, source.get_shape())):
            if size < 0 or (extent != DYNAMIC_INDEX and size > extent):
                raise self.error(f"slice size {size} of dim {d} is not within its extent {extent}")
            if extent == DYNAMIC_INDEX and size > 1:
                raise self.error(
                    f"slice size {size} of dynamic dim {d} exceeds 1; accy gathers slices of "
                    "at most one element along a dynamic dim (any run-time size holds it)"
                )
        offset_dims = self.dims("offset_dims")
        collapsed = self.dims("collapsed_slice_dims")
        operand_batching = self.dims("operand_batching_dims")
        indices_batching = self.dims("start_indices_batching_dims")
        start_map = self.dims("start_index_map")
        _verify_index_dims(
            self,
            ("offset_dims", result.get_num_dims()),
            ("collapsed_slice_dims", "start_index_map"),
            ("operand_batching_dims", "start_indices_batching_dims"),
            rank,
            index_rank,
            vector_dim,
        )
        for d in (*collapsed, *operand_batching):
            if sizes[d] > 1:
                raise self.error(
                    f"slice size {sizes[d]} of collapsed or batching dim {d} exceeds 1"
                )
            if sizes[d] == 0 and 0 not in result.get_shape():
                raise self.error(
                    f"slice size 0 of collapsed or batching dim {d} leaves no element to "
                    "gather into the result's (StableHLO leaves their values to the "
                    "implementation; accy refuses them)"
                )
        for d, e in zip(operand_batching, indices_batching):
            sizes_of_batch = (source.get_shape()[d], indices.get_shape()[e])
            if DYNAMIC_INDEX not in sizes_of_batch and sizes_of_batch[0] != sizes_of_batch[1]:
                raise self.error(
                    f"operand batching dim {d} and start indices batching dim {e} differ in size"
                )
        vector = indices.get_shape()[vector_dim] if vector_dim < index_rank else 1
        if len(start_map) != vector:
            raise self.error(
                f"start_index_map has {len(start_map)} dims for index vectors of {vector}"
            )
        kept = rank - len(collapsed) - len(operand_batching)
        if len(offset_dims) != kept:
            raise self.error(
                f"offset_dims {list(offset_dims)} name {len(offset_dims)} dims for the slice's "
                f"{kept} kept dims"
            )
        expected = gather_shape(
            indices.get_shape(), offset_dims, collapsed, operand_batching, vector_dim, sizes
        )
        if len(expected) != result.get_num_dims() or tuple(expected) != tuple(result.get_shape()):
            raise self.error(
                f"result shape {format_shape(result.get_shape())} differs from the gathered "
                f"shape {format_shape(expected)}"
            )
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")


def _verify_index_dims(
    op: GatherOp | ScatterOp,
    window: tuple[str, int],
    dropped_and_mapped: tuple[str, str],
    batching: tuple[str, str],
    rank: int,
    index_rank: int,
    vector_dim: int,
) -> None:
    """Raise unless a gather's or scatter's dimension numbers are consistent: the window
    list (name, bound), the operand dims dropped from the window and those the index
    vector maps to, the operand and indices batching dims, for an operand of `rank` and
    indices of `index_rank` with their vector at `vector_dim`."""
    (window_name, window_bound), (dropped, mapped), (batch, indices_batch) = (
        window,
        dropped_and_mapped,
        batching,
    )
    dims = {name: op.dims(name) for name in (window_name, dropped, mapped, batch, indices_batch)}
    for name, bound, ordered in (
        (window_name, window_bound, True),
        (dropped, rank, True),
        (batch, rank, True),
        (indices_batch, index_rank, False),
        (mapped, rank, False),
    ):
        values = dims[name]
        if len(set(values)) != len(values) or any(not 0 <= d < bound for d in values):
            raise op.error(f"{name} {list(values)} are not distinct dims below {bound}")
        if ordered and list(values) != sorted(values):
            raise op.error(f"{name} {list(values)} are not sorted")
    for name in (dropped, mapped):
        if set(dims[name]) & set(dims[batch]):
            raise op.error(f"{name} and {batch} overlap")
    if len(dims[batch]) != len(dims[indices_batch]):
        raise op.error(f"{batch} and {indices_batch} differ in length")
    if vector_dim in dims[indices_batch]:
        raise op.error(f"{indices_batch} holds index_vector_dim")


def scatter_window_dims(
    operand_rank: int, inserted_window_dims: Sequence[int], input_batching_dims: Sequence[int]
) -> list[int]:
    """The operand dims an update window spans: those not inserted and not batching."""
    dropped = set(inserted_window_dims) | set(input_batching_dims)
    return [d for d in range(operand_rank) if d not in dropped]


SCALAR_BODY_OPS: tuple[type[IRDLOperation], ...] = (
    ElementwiseBinaryOperation,
    ElementwiseUnaryOperation,
    CompareOp,
    IsFiniteOp,
    SelectOp,
    ConvertOp,
    BitcastConvertOp,
    ConstantOp,
)
"""The ops a scalar body (a scatter's update computation, a fold's body, a sort's comparator)
may hold."""


@irdl_op_definition
class ScatterOp(AccyOperation):
    """`%r = accy.scatter %x[%i] updates(%u), update_window_dims = [1],
    inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims =
    [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<10x4xf32>),
    tensor<3x1xi32>, (tensor<3x4xf32>) -> (tensor<10x4xf32>) ({^bb0(%a: tensor<f32>, %b:
    tensor<f32>): ... accy.yield %s : tensor<f32>})` (rows 3 of a 10x4 table combined with
    the updates: an embedding gradient).

    StableHLO's scatter: each result is its input with each update element combined into
    the element it addresses by the update computation (the body: the N current elements,
    then the N update elements in, the N new elements yielded; ops on rank-0 tensors),
    for N inputs of one shape and N updates of one shape. An update index's scatter dims
    (those not in `update_window_dims`) pick the index vector of `%i` along
    `index_vector_dim`, placed on the operand dims `scatter_dims_to_operand_dims` names;
    its window dims place it inside that window (the operand dims but
    `inserted_window_dims` and `input_batching_dims`, in order); an input batching dim
    follows the paired indices dim. Updates that address an element outside the inputs
    are skipped. Updates apply in row-major order of the updates (`unique_indices`
    promises that no two address one element).
    """

    name = "accy.scatter"

    inputs = var_operand_def(AccyTensor)
    scatter_indices = operand_def(AccyTensor)
    updates = var_operand_def(AccyTensor)
    update_window_dims = prop_def(DenseArrayBase.constr(i64))
    inserted_window_dims = prop_def(DenseArrayBase.constr(i64))
    input_batching_dims = prop_def(DenseArrayBase.constr(i64))
    scatter_indices_batching_dims = prop_def(DenseArrayBase.constr(i64))
    scatter_dims_to_operand_dims = prop_def(DenseArrayBase.constr(i64))
    index_vector_dim = prop_def(IntegerAttr.constr(type=i64))
    unique_indices = opt_prop_def(UnitAttr)
    update_computation = region_def("single_block")
    res = var_result_def(AccyTensor)

    traits = traits_def(Pure(), EndsWithYield())
    custom_directives = (DimList,)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$inputs `[` $scatter_indices `]` `updates` `(` $updates `)` `,` `update_window_dims` "
        "`=` custom<DimList>($update_window_dims) `,` `inserted_window_dims` `=` "
        "custom<DimList>($inserted_window_dims) `,` `input_batching_dims` `=` "
        "custom<DimList>($input_batching_dims) `,` `scatter_indices_batching_dims` `=` "
        "custom<DimList>($scatter_indices_batching_dims) `,` `scatter_dims_to_operand_dims` "
        "`=` custom<DimList>($scatter_dims_to_operand_dims) `,` `index_vector_dim` `=` "
        "$index_vector_dim (`unique_indices` $unique_indices^)? attr-dict `:` `(` "
        "type($inputs) `)` `,` type($scatter_indices) `,` `(` type($updates) `)` `->` `(` "
        "type($res) `)` $update_computation"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        scatter_indices: SSAValue,
        updates: Sequence[SSAValue],
        update_computation: Region,
        *,
        update_window_dims: Sequence[int],
        inserted_window_dims: Sequence[int],
        scatter_dims_to_operand_dims: Sequence[int],
        index_vector_dim: int,
        input_batching_dims: Sequence[int] = (),
        scatter_indices_batching_dims: Sequence[int] = (),
        unique_indices: bool = False,
    ):
        lists = {
            "update_window_dims": update_window_dims,
            "inserted_window_dims": inserted_window_dims,
            "input_batching_dims": input_batching_dims,
            "scatter_indices_batching_dims": scatter_indices_batching_dims,
            "scatter_dims_to_operand_dims": scatter_dims_to_operand_dims,
        }
        properties: dict[str, Attribute] = {
            name: DenseArrayBase.from_list(i64, list(values)) for name, values in lists.items()
        }
        properties["index_vector_dim"] = IntegerAttr(index_vector_dim, i64)
        if unique_indices:
            properties["unique_indices"] = UnitAttr()
        super().__init__(
            operands=[list(inputs), scatter_indices, list(updates)],
            result_types=[[v.type for v in inputs]],
            properties=properties,
            regions=[update_computation],
        )

    @property
    def operand(self) -> SSAValue:
        """The first input (the one a result may take the buffer of in place)."""
        return self.inputs[0]

    @property
    def result(self) -> SSAValue:
        """The first result."""
        return self.res[0]

    def dims(self, name: str) -> tuple[int, ...]:
        """One of the dimension-number lists, by property name."""
        return _dims_of(getattr(self, name))

    @property
    def vector_dim(self) -> int:
        return self.index_vector_dim.value.data

    def verify_(self) -> None:
        if not self.inputs or len(self.inputs) != len(self.updates):
            raise self.error(
                f"has {len(self.inputs)} inputs and {len(self.updates)} updates; they must be "
                "as many, at least one"
            )
        if [r.type for r in self.res] != [v.type for v in self.inputs]:
            raise self.error("result types differ from the input types")
        source, indices, updates = (
            self.operand.type,
            self.scatter_indices.type,
            self.updates[0].type,
        )
        rank, index_rank = source.get_num_dims(), indices.get_num_dims()
        element = indices.get_element_type()
        if not isinstance(element, IntegerType) or is_bool(element):
            raise self.error(f"scatter indices {indices} are not a tensor of integers")
        if not indices.has_static_shape():
            raise self.error("scatter indices must have a static shape")
        for index, (value, update) in enumerate(zip(self.inputs, self.updates)):
            if not shapes_compatible(value.type.get_shape(), source.get_shape()):
                raise self.error(f"input #{index} differs in shape from input #0")
            if not shapes_compatible(update.type.get_shape(), updates.get_shape()):
                raise self.error(f"updates #{index} differ in shape from updates #0")
            if update.type.get_element_type() != value.type.get_element_type():
                raise self.error("operand and updates element types differ")
        vector_dim = self.vector_dim
        if not 0 <= vector_dim <= index_rank:
            raise self.error(
                f"index_vector_dim {vector_dim} is not within the scatter indices' {index_rank} dims"
            )
        window_dims = self.dims("update_window_dims")
        inserted = self.dims("inserted_window_dims")
        input_batching = self.dims("input_batching_dims")
        indices_batching = self.dims("scatter_indices_batching_dims")
        to_operand = self.dims("scatter_dims_to_operand_dims")
        _verify_index_dims(
            self,
            ("update_window_dims", updates.get_num_dims()),
            ("inserted_window_dims", "scatter_dims_to_operand_dims"),
            ("input_batching_dims", "scatter_indices_batching_dims"),
            rank,
            index_rank,
            vector_dim,
        )
        vector = indices.get_shape()[vector_dim] if vector_dim < index_rank else 1
        if len(to_operand) != vector:
            raise self.error(
                f"scatter_dims_to_operand_dims has {len(to_operand)} dims for index vectors of "
                f"{vector}"
            )
        operand_window = scatter_window_dims(rank, inserted, input_batching)
        if len(window_dims) != len(operand_window):
            raise self.error(
                f"update_window_dims {list(window_dims)} name {len(window_dims)} dims for the "
                f"operand's {len(operand_window)} window dims"
            )
        scatter_sizes = [n for d, n in enumerate(indices.get_shape()) if d != vector_dim]
        if updates.get_num_dims() != len(window_dims) + len(scatter_sizes):
            raise self.error(
                f"updates of rank {updates.get_num_dims()} differ from the "
                f"{len(window_dims)} window and {len(scatter_sizes)} scatter dims"
            )
        update_shape = updates.get_shape()
        for d, operand_dim in zip(window_dims, operand_window):
            extent = source.get_shape()[operand_dim]
            if DYNAMIC_INDEX not in (extent, update_shape[d]) and update_shape[d] > extent:
                raise self.error(
                    f"update window dim {d} of size {update_shape[d]} exceeds operand dim "
                    f"{operand_dim} of size {source.get_shape()[operand_dim]}"
                )
        scatter_dims = [d for d in range(updates.get_num_dims()) if d not in window_dims]
        if not shapes_compatible([update_shape[d] for d in scatter_dims], scatter_sizes):
            raise self.error(
                f"update scatter dims {format_shape([update_shape[d] for d in scatter_dims])} "
                f"differ from the scatter indices' {format_shape(scatter_sizes)}"
            )
        for d, e in zip(input_batching, indices_batching):
            if not dims_compatible(source.get_shape()[d], indices.get_shape()[e]):
                raise self.error(
                    f"input batching dim {d} and scatter indices batching dim {e} differ in size"
                )
        elements = [v.type.get_element_type() for v in self.inputs]
        _verify_scalar_body(
            self, self.update_computation, elements * 2, elements, "update computation"
        )


def _verify_scalar_body(
    op: AccyOperation,
    body: Region,
    arguments: Sequence[Attribute],
    results: Sequence[Attribute],
    what: str,
) -> None:
    """Raise unless `body` takes rank-0 tensors of the element types `arguments`, yields
    ones of `results`, and computes with scalar body ops on values of its own only."""
    expected = [TensorType(e, []) for e in arguments]
    block = body.block
    if [a.type for a in block.args] != expected:
        raise op.error(
            f"{what} must take ({', '.join(map(str, expected))}), got "
            f"({', '.join(str(a.type) for a in block.args)})"
        )
    yielded = [TensorType(e, []) for e in results]
    terminator = block.last_op
    if not isinstance(terminator, YieldOp) or [v.type for v in terminator.values] != yielded:
        raise op.error(f"{what} must end in an accy.yield of {', '.join(map(str, yielded))}")
    for inner in block.ops:
        if inner is not terminator and not isinstance(inner, SCALAR_BODY_OPS):
            raise op.error(
                f"{what} holds '{inner.name}'; it may hold elementwise ops, compare, select, "
                "convert and constants"
            )
        if any(r.type.get_num_dims() != 0 for r in inner.results):
            raise op.error(f"{what} holds '{inner.name}' on a tensor of rank > 0")
        for value in inner.operands:
            if value.owner is not block and getattr(value.owner, "parent", None) is not block:
                raise op.error(f"{what}'s '{inner.name}' reads a value defined outside it")


def in_scalar_body(op: IRDLOperation) -> bool:
    """Whether `op` is inside a scatter's update computation, a fold's body or a sort's
    comparator (computed per element by that op's kernel, never planned itself)."""
    return isinstance(
        op.parent_op(), (ScatterOp, FoldOp, SortOp, ReduceWindowOp, SelectAndScatterOp)
    )


def _check_start_indices(op: AccyOperation, starts: Sequence[SSAValue]) -> None:
    """Raise unless every start index is a rank-0 integer (not boolean) tensor."""
    for index, start in enumerate(starts):
        t = start.type
        element = t.get_element_type()  # type: ignore[attr-defined]
        if t.get_num_dims() != 0 or not isinstance(element, IntegerType) or is_bool(element):  # type: ignore[attr-defined]
            raise op.error(f"start index #{index} of type {t} is not a rank-0 integer tensor")


def _parse_slice_ranges(
    parser: Parser,
) -> tuple[DenseArrayBase, DenseArrayBase, DenseArrayBase]:
    def parse_range() -> tuple[int, int, int]:
        start = _parse_i64(parser)
        parser.parse_punctuation(":")
        limit = _parse_i64(parser)
        stride = 1
        if parser.parse_optional_punctuation(":") is not None:
            stride = _parse_i64(parser)
        return start, limit, stride

    ranges = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parse_range)
    return tuple(  # type: ignore[return-value]
        DenseArrayBase.from_list(i64, [r[i] for r in ranges]) for i in range(3)
    )


@irdl_custom_directive
class SliceRanges(CustomDirective):
    """`[start:limit, start:limit:stride, ...]`: one range per dim (stride 1 is omitted)."""

    start: AttributeVariable
    limit: AttributeVariable
    strides: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> bool:
        start, limit, strides = _parse_slice_ranges(parser)
        self.start.set(state, start)
        self.limit.set(state, limit)
        self.strides.set(state, strides)
        return True

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        ranges = []
        for start, limit, stride in zip(
            *(_dims_of(v.get(op)) for v in (self.start, self.limit, self.strides))
        ):
            ranges.append(f"{start}:{limit}" + ("" if stride == 1 else f":{stride}"))
        printer.print_string("[" + ", ".join(ranges) + "]")
        state.should_emit_space = True
        state.last_was_punctuation = False


@irdl_op_definition
class IotaOp(AccyOperation):
    """`%r = accy.iota dim = 0 : tensor<4x3xi32>`: each element is its index along `dim`.

    The result has a numeric element type; a dynamic dim has the plan's run-time size.
    """

    name = "accy.iota"

    iota_dimension = prop_def(IntegerAttr.constr(type=i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())

    assembly_format = "`dim` `=` $iota_dimension attr-dict `:` type($result)"

    def __init__(self, result_type: TensorType, dim: int):
        super().__init__(
            result_types=[result_type],
            properties={"iota_dimension": IntegerAttr(dim, i64)},
        )

    @property
    def dimension(self) -> int:
        return self.iota_dimension.value.data

    def verify_(self) -> None:
        result = self.result.type
        rank = result.get_num_dims()
        if not 0 <= self.dimension < rank:
            raise self.error(f"dim {self.dimension} is out of range for rank {rank}")
        if is_bool(result.get_element_type()):
            raise self.error(f"expects a numeric element type, got {result.get_element_type()}")


@irdl_op_definition
class ConcatenateOp(AccyOperation):
    """`%r = accy.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>`.

    The operands (one or more) have the same rank and element type and agree in every
    dim except `dim`; the result's size along `dim` is the sum of theirs.
    """

    name = "accy.concatenate"

    inputs = var_operand_def(AccyTensor)
    dimension = prop_def(IntegerAttr.constr(type=i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: TensorType):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"dimension": IntegerAttr(dim, i64)},
        )

    @property
    def dim(self) -> int:
        return self.dimension.value.data

    def verify_(self) -> None:
        result = self.result.type
        if not self.inputs:
            raise self.error("expects at least one operand")
        rank = result.get_num_dims()
        if not 0 <= self.dim < rank:
            raise self.error(f"dim {self.dim} is out of range for rank {rank}")
        total = 0
        for index, value in enumerate(self.inputs):
            operand = value.type
            if operand.get_element_type() != result.get_element_type():
                raise self.error(
                    f"operand #{index} has element type {operand.get_element_type()}, "
                    f"the result {result.get_element_type()}"
                )
            if operand.get_num_dims() != rank:
                raise self.error(
                    f"operand #{index} has rank {operand.get_num_dims()}, the result {rank}"
                )
            for d, (size, target) in enumerate(zip(operand.get_shape(), result.get_shape())):
                if d != self.dim and not dims_compatible(size, target):
                    raise self.error(
                        f"operand #{index} dim {d} is {format_dim(size)}, the result's "
                        f"{format_dim(target)}"
                    )
            size = operand.get_shape()[self.dim]
            total = DYNAMIC_INDEX if DYNAMIC_INDEX in (total, size) else total + size
        if not dims_compatible(total, result.get_shape()[self.dim]):
            raise self.error(
                f"result dim {self.dim} is {format_dim(result.get_shape()[self.dim])}, "
                f"the operands' sizes add up to {format_dim(total)}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(f", dim = {self.dim}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list((v.type for v in self.inputs), printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConcatenateOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(",") is not None:
            if parser.parse_optional_keyword("dim") is not None:
                break
            operands.append(parser.parse_unresolved_operand())
        else:
            parser.raise_error("expected `, dim = N` after the operands of accy.concatenate")
        parser.parse_punctuation("=")
        dim = _parse_i64(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        if len(types) != len(operands):
            parser.raise_error(f"expected {len(operands)} operand types, got {len(types)}", pos)
        inputs = parser.resolve_operands(operands, types, pos)
        op = cls(inputs, dim, result_type)  # type: ignore[arg-type]
        op.attributes |= attributes
        return op


@irdl_op_definition
class SliceOp(AccyOperation):
    """`%r = accy.slice %x [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>`.

    One `start:limit[:stride]` range per operand dim (`0 <= start <= limit <= size`,
    stride >= 1); result dim `d` has `ceil((limit - start) / stride)` elements.
    """

    name = "accy.slice"

    operand = operand_def(AccyTensor)
    start_indices = prop_def(DenseArrayBase.constr(i64))
    limit_indices = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (SliceRanges,)

    assembly_format = (
        "$operand custom<SliceRanges>($start_indices, $limit_indices, $strides) "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        operand: SSAValue,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[operand],
            result_types=[result_type],
            properties={
                "start_indices": DenseArrayBase.from_list(i64, start),
                "limit_indices": DenseArrayBase.from_list(i64, limit),
                "strides": DenseArrayBase.from_list(i64, strides),
            },
        )

    @property
    def ranges(self) -> tuple[tuple[int, int, int], ...]:
        """`(start, limit, stride)` per dim."""
        return tuple(
            zip(
                _dims_of(self.start_indices),
                _dims_of(self.limit_indices),
                _dims_of(self.strides),
            )
        )

    def verify_(self) -> None:
        source, result = self.operand.type, self.result.type
        lengths = {len(_dims_of(a)) for a in (self.start_indices, self.limit_indices, self.strides)}
        if lengths != {source.get_num_dims()}:
            raise self.error(
                f"expects one range per operand dim ({source.get_num_dims()}), got "
                f"{len(_dims_of(self.start_indices))} starts, "
                f"{len(_dims_of(self.limit_indices))} limits and "
                f"{len(_dims_of(self.strides))} strides"
            )
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")
        expected = []
        for d, ((start, limit, stride), size) in enumerate(zip(self.ranges, source.get_shape())):
            if stride < 1:
                raise self.error(f"stride {stride} of dim {d} must be at least 1")
            if not 0 <= start <= limit or (size != DYNAMIC_INDEX and limit > size):
                raise self.error(
                    f"range {start}:{limit} of dim {d} is not within 0:{format_dim(size)}"
                )
            expected.append(-(-(limit - start) // stride))
        if not shapes_compatible(expected, result.get_shape()):
            raise self.error(
                f"result shape {format_shape(result.get_shape())} differs from the "
                f"sliced shape {format_shape(expected)}"
            )


# ---------------------------------------------------------------------------------------
# Reductions, contractions, scans
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class ReduceOp(AccyOperation):
    """`%r = accy.reduce add %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>`.

    The result keeps the operand dims that are not reduced, in order.
    """

    name = "accy.reduce"

    kind = prop_def(CombinerKindAttr)
    operand = operand_def(AccyTensor)
    dimensions = prop_def(DenseArrayBase.constr(i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$kind $operand `,` `dims` `=` custom<DimList>($dimensions) attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        kind: CombinerKind,
        operand: SSAValue,
        dims: Sequence[int],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[operand],
            result_types=[result_type],
            properties={
                "kind": CombinerKindAttr(kind),
                "dimensions": DenseArrayBase.from_list(i64, dims),
            },
        )

    def verify_(self) -> None:
        source, result = self.operand.type, self.result.type
        dims = _dims_of(self.dimensions)
        rank = source.get_num_dims()
        if len(set(dims)) != len(dims) or not all(0 <= d < rank for d in dims):
            raise self.error(
                f"dims {list(dims)} must be distinct dims of the operand's {rank} dims"
            )
        kept = [s for d, s in enumerate(source.get_shape()) if d not in dims]
        if not shapes_compatible(kept, result.get_shape()):
            raise self.error(
                f"result shape {format_shape(result.get_shape())} differs from the "
                f"kept shape {format_shape(kept)}"
            )
        if source.get_element_type() != result.get_element_type():
            raise self.error("operand and result element types differ")


def _verify_operands_inits_results(op: FoldOp | ReduceWindowOp, verb: str) -> Sequence[int]:
    """Raise unless a fold's or reduce_window's operands (at least one, of one shape),
    inits and results match in number; the operands' shape."""
    if not op.inputs:
        raise op.error(f"{verb} no operands")
    if not len(op.inputs) == len(op.inits) == len(op.res):
        raise op.error(
            f"has {len(op.inputs)} operands, {len(op.inits)} inits and "
            f"{len(op.res)} results; they must match"
        )
    shape = op.inputs[0].type.get_shape()  # type: ignore[attr-defined]
    for index, value in enumerate(op.inputs):
        if value.type.get_shape() != shape:  # type: ignore[attr-defined]
            raise op.error(
                f"operand #{index} has shape {format_shape(value.type.get_shape())}, "  # type: ignore[attr-defined]
                f"operand #0 {format_shape(shape)}"
            )
    return shape


@irdl_op_definition
class FoldOp(AccyOperation):
    """`%v, %i = accy.fold (%x, %iota : tensor<4x9xf32>, tensor<4x9xi32>) init (%x0, %i0 :
    tensor<f32>, tensor<i32>), dims = [1] -> (tensor<4xf32>, tensor<4xi32>) ({^bb0(%a: tensor<f32>, %j: tensor<i32>, %b: tensor<f32>, %k: tensor<i32>): ...
    accy.yield %c, %l : tensor<f32>, tensor<i32>})` (an argmax of each row).

    StableHLO's reduce in its general form: N operands of one shape reduced together over
    `dims` by a body, from N rank-0 inits. Each result element starts at the inits and
    folds in the operands' elements at its position, in row-major order of the reduced
    dims: the body takes the N accumulated values, then the N elements, and yields the
    N new accumulated values (ops on rank-0 tensors). The results keep the operands'
    other dims, in order.
    """

    name = "accy.fold"

    inputs = var_operand_def(AccyTensor)
    inits = var_operand_def(AccyTensor)
    dimensions = prop_def(DenseArrayBase.constr(i64))
    body = region_def("single_block")
    res = var_result_def(AccyTensor)

    traits = traits_def(Pure(), EndsWithYield())
    custom_directives = (DimList,)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "`(` $inputs `:` type($inputs) `)` `init` `(` $inits `:` type($inits) `)` `,` `dims` "
        "`=` custom<DimList>($dimensions) attr-dict `->` `(` type($res) `)` $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        inits: Sequence[SSAValue],
        dims: Sequence[int],
        body: Region,
    ):
        shapes = []
        for value in inputs:
            assert isinstance(value.type, TensorType)
            kept = [n for d, n in enumerate(value.type.get_shape()) if d not in dims]
            shapes.append(TensorType(value.type.get_element_type(), kept))
        super().__init__(
            operands=[inputs, inits],
            result_types=[shapes],
            properties={"dimensions": DenseArrayBase.from_list(i64, list(dims))},
            regions=[body],
        )

    @property
    def dims(self) -> tuple[int, ...]:
        return _dims_of(self.dimensions)

    def verify_(self) -> None:
        shape = _verify_operands_inits_results(self, "folds")
        elements = [v.type.get_element_type() for v in self.inputs]
        for index, (init, element) in enumerate(zip(self.inits, elements)):
            if init.type != TensorType(element, []):
                raise self.error(f"init #{index} must be a tensor<{element}>, got {init.type}")
        dims = self.dims
        if len(set(dims)) != len(dims) or not all(0 <= d < len(shape) for d in dims):
            raise self.error(
                f"dims {list(dims)} must be distinct dims of the operands' {len(shape)} dims"
            )
        kept = [n for d, n in enumerate(shape) if d not in dims]
        for index, (result, element) in enumerate(zip(self.res, elements)):
            if result.type != TensorType(element, kept):
                raise self.error(
                    f"result #{index} must be a {TensorType(element, kept)}, got {result.type}"
                )
        _verify_scalar_body(self, self.body, elements * 2, elements, "body")


def _with_extent(t: TensorType, dim: int, extent: int) -> TensorType:
    """`t` with `extent` along `dim`."""
    shape = list(t.get_shape())
    shape[dim] = extent
    return TensorType(t.get_element_type(), shape)


@irdl_op_definition
class SortOp(AccyOperation):
    """`%k, %v = accy.sort(%keys, %values : tensor<5x7xf32>, tensor<5x7xi32>), dim = 1
    stable -> (tensor<5x7xf32>, tensor<5x7xi32>) ({^bb0(%a: tensor<f32>, %b: tensor<f32>,
    %i: tensor<i32>, %j: tensor<i32>): ... accy.yield %less : tensor<i1>})`.

    StableHLO's sort: N operands of one shape permuted together along `dim`, each slice
    into the order the comparator defines. The comparator takes each operand's pair of
    elements (lhs, rhs, in operand order) and yields whether lhs goes before rhs (a
    strict weak order). accy's sorts are always stable (equal elements keep their
    order), so `stable` records only what the program asked for.

    The results may be shorter than the operands along `dim` (a top-k): they hold the
    first elements of each sorted slice (`accy-sort-prefixes` folds the leading slices
    of a sort into it).
    """

    name = "accy.sort"

    inputs = var_operand_def(AccyTensor)
    dimension = prop_def(IntegerAttr.constr(type=i64))
    is_stable = opt_prop_def(UnitAttr)
    comparator = region_def("single_block")
    res = var_result_def(AccyTensor)

    traits = traits_def(Pure(), EndsWithYield())

    assembly_format = (
        "`(` $inputs `:` type($inputs) `)` `,` `dim` `=` $dimension (`stable` $is_stable^)? "
        "attr-dict `->` `(` type($res) `)` $comparator"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        dim: int,
        comparator: Region,
        *,
        stable: bool = False,
        extent: int | None = None,
    ):
        properties: dict[str, Attribute] = {"dimension": IntegerAttr(dim, i64)}
        if stable:
            properties["is_stable"] = UnitAttr()
        types = [v.type for v in inputs]
        if extent is not None:
            types = [_with_extent(t, dim, extent) for t in types]  # type: ignore[arg-type]
        super().__init__(
            operands=[inputs],
            result_types=[types],
            properties=properties,
            regions=[comparator],
        )

    @property
    def dim(self) -> int:
        return self.dimension.value.data

    @property
    def kept(self) -> int:
        """How many elements of each sorted slice the results hold (along `dim`)."""
        shape = self.res[0].type.get_shape()  # type: ignore[attr-defined]
        return shape[self.dim] if shape else 1

    def verify_(self) -> None:
        if not self.inputs:
            raise self.error("sorts no operands")
        shape = self.inputs[0].type.get_shape()
        if not all(v.type.has_static_shape() for v in self.inputs):
            raise self.error("operands must have static shapes")
        for index, value in enumerate(self.inputs):
            if value.type.get_shape() != shape:
                raise self.error(
                    f"operand #{index} has shape {format_shape(value.type.get_shape())}, "
                    f"operand #0 {format_shape(shape)}"
                )
        if not 0 <= self.dim < max(1, len(shape)):
            raise self.error(f"dim {self.dim} is not within the operands' {len(shape)} dims")
        if len(self.res) != len(self.inputs):
            raise self.error("result types differ from the operand types")
        kept = self.res[0].type.get_shape()[self.dim] if shape else 1  # type: ignore[attr-defined]
        if shape and not 0 <= kept <= shape[self.dim]:
            raise self.error(
                f"results keep {kept} elements along dim {self.dim}, of {shape[self.dim]}"
            )
        expected = [v.type for v in self.inputs]
        if shape:
            expected = [_with_extent(t, self.dim, kept) for t in expected]  # type: ignore[arg-type]
        if [r.type for r in self.res] != expected:
            raise self.error("result types differ from the operand types")
        pairs = [v.type.get_element_type() for v in self.inputs for _ in range(2)]
        _verify_scalar_body(self, self.comparator, pairs, [IntegerType(1)], "comparator")


@irdl_op_definition
class DotGeneralOp(AccyOperation):
    """`%r = accy.dot_general %l, %r, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ...`.

    The result shape is the batch dims, then the lhs free dims, then the rhs free dims.
    """

    name = "accy.dot_general"

    T: ClassVar = VarConstraint("T", ElementType)

    lhs = operand_def(TensorType.constr(T))
    rhs = operand_def(TensorType.constr(T))
    lhs_batching_dimensions = prop_def(DenseArrayBase.constr(i64))
    rhs_batching_dimensions = prop_def(DenseArrayBase.constr(i64))
    lhs_contracting_dimensions = prop_def(DenseArrayBase.constr(i64))
    rhs_contracting_dimensions = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType.constr(T))

    traits = traits_def(Pure())
    custom_directives = (DimPair,)

    assembly_format = (
        "$lhs `,` $rhs `,` "
        "`batching_dims` `=` custom<DimPair>($lhs_batching_dimensions, $rhs_batching_dimensions) `,` "
        "`contracting_dims` `=` custom<DimPair>($lhs_contracting_dimensions, $rhs_contracting_dimensions) "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        *,
        batching: tuple[Sequence[int], Sequence[int]],
        contracting: tuple[Sequence[int], Sequence[int]],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={
                "lhs_batching_dimensions": DenseArrayBase.from_list(i64, batching[0]),
                "rhs_batching_dimensions": DenseArrayBase.from_list(i64, batching[1]),
                "lhs_contracting_dimensions": DenseArrayBase.from_list(i64, contracting[0]),
                "rhs_contracting_dimensions": DenseArrayBase.from_list(i64, contracting[1]),
            },
        )

    @property
    def batching(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return _dims_of(self.lhs_batching_dimensions), _dims_of(self.rhs_batching_dimensions)

    @property
    def contracting(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return _dims_of(self.lhs_contracting_dimensions), _dims_of(self.rhs_contracting_dimensions)

    def expected_shape(self) -> list[int]:
        lhs, rhs = self.lhs.type.get_shape(), self.rhs.type.get_shape()
        (lb, rb), (lc, rc) = self.batching, self.contracting
        lhs_free = [d for d in range(len(lhs)) if d not in lb and d not in lc]
        rhs_free = [d for d in range(len(rhs)) if d not in rb and d not in rc]
        return [lhs[d] for d in lb] + [lhs[d] for d in lhs_free] + [rhs[d] for d in rhs_free]

    def verify_(self) -> None:
        lhs, rhs = self.lhs.type.get_shape(), self.rhs.type.get_shape()
        for side, (left, right) in (
            ("batching", self.batching),
            ("contracting", self.contracting),
        ):
            if len(left) != len(right):
                raise self.error(f"{side} dims {list(left)} x {list(right)} differ in length")
            for l_dim, r_dim in zip(left, right):
                if not (0 <= l_dim < len(lhs) and 0 <= r_dim < len(rhs)):
                    raise self.error(f"{side} dims {list(left)} x {list(right)} are out of range")
                if not dims_compatible(lhs[l_dim], rhs[r_dim]):
                    raise self.error(
                        f"{side} dim sizes differ: lhs dim {l_dim} is "
                        f"{format_dim(lhs[l_dim])}, rhs dim {r_dim} is "
                        f"{format_dim(rhs[r_dim])}"
                    )
        for operand, dims in (
            ("lhs", self.batching[0] + self.contracting[0]),
            ("rhs", self.batching[1] + self.contracting[1]),
        ):
            if len(set(dims)) != len(dims):
                raise self.error(f"{operand} batching and contracting dims overlap")
        expected = self.expected_shape()
        if not shapes_compatible(expected, self.result.type.get_shape()):
            raise self.error(
                f"result shape {format_shape(self.result.type.get_shape())} differs from "
                f"the expected {format_shape(expected)}"
            )


@irdl_op_definition
class ScanOp(AccyOperation):
    """`%r = accy.scan add %x, %scratch, dim = 1 : tensor<2x3xf32>`: an inclusive scan.

    The result is written into the buffer of `%scratch` (operand #1), which the memory
    plan treats as the scan's output storage. f16/bf16 scans carry f32; `rounded` rounds
    the carry to the element type after every step (a running reduction computed in the
    element type, as StableHLO's reduce_window body is).
    """

    name = "accy.scan"

    T: ClassVar = VarConstraint("T", AccyTensor)

    kind = prop_def(CombinerKindAttr)
    operand = operand_def(T)
    scratch = operand_def(T)
    dimension = prop_def(IntegerAttr.constr(type=i64))
    rounded = opt_prop_def(UnitAttr)
    result = result_def(T)

    assembly_format = (
        "$kind $operand `,` $scratch `,` `dim` `=` $dimension (`rounded` $rounded^)? "
        "attr-dict `:` type($result)"
    )

    def __init__(
        self,
        kind: CombinerKind,
        operand: SSAValue,
        scratch: SSAValue,
        dim: int,
        *,
        rounded: bool = False,
    ):
        properties: dict[str, Attribute] = {
            "kind": CombinerKindAttr(kind),
            "dimension": IntegerAttr(dim, i64),
        }
        if rounded:
            properties["rounded"] = UnitAttr()
        super().__init__(
            operands=[operand, scratch], result_types=[operand.type], properties=properties
        )

    def verify_(self) -> None:
        rank = self.operand.type.get_num_dims()
        if not 0 <= self.dimension.value.data < rank:
            raise self.error(f"dim {self.dimension.value.data} is out of range for rank {rank}")


# ---------------------------------------------------------------------------------------
# Windows and convolutions
# ---------------------------------------------------------------------------------------


def window_positions(
    size: int,
    window: int,
    stride: int,
    base_dilation: int,
    window_dilation: int,
    low: int,
    high: int,
) -> int:
    """How many windows of `window` elements (`window_dilation` apart, placed `stride`
    apart) fit in `size` elements dilated by `base_dilation` and padded by `low`/`high`
    (either may be negative): the result size of that dim (a dynamic size stays dynamic:
    only a dim the window leaves untouched may be dynamic)."""
    if size == DYNAMIC_INDEX:
        return DYNAMIC_INDEX
    dilated = (size - 1) * base_dilation + 1 if size > 0 else 0
    padded = dilated + low + high
    extent = (window - 1) * window_dilation + 1 if window > 0 else 0
    if padded < extent:
        return 0
    return (padded - extent) // stride + 1


def _verify_window_lists(op: AccyOperation, rank: int, lists: dict[str, Sequence[int]]) -> None:
    """Raise unless each window attribute has `rank` entries and window sizes, strides
    and dilations are positive (paddings may be negative)."""
    for name, values in lists.items():
        if len(values) != rank:
            raise op.error(f"{name} has {len(values)} entries for {rank} dims")
        if not name.startswith("padding") and any(v < 1 for v in values):
            raise op.error(f"{name} {list(values)} must be positive")


def untouched(
    window: int, stride: int, *, dilations: Sequence[int] = (), padding: Sequence[int] = ()
) -> bool:
    """Whether a window leaves a dim as it is: window 1, stride 1, every dilation 1 and no
    padding."""
    return window == 1 and stride == 1 and all(d == 1 for d in dilations) and not any(padding)


def _static_windows(
    op: AccyOperation,
    value: SSAValue,
    window: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[Sequence[int]],
    padding: Sequence[Sequence[int]],
) -> None:
    """Raise unless every dynamic dim of `value` is one the window leaves untouched."""
    for d, size in enumerate(value.type.get_shape()):  # type: ignore[attr-defined]
        if size == DYNAMIC_INDEX and not untouched(
            window[d],
            strides[d],
            dilations=[values[d] for values in dilations],
            padding=[values[d] for values in padding],
        ):
            raise op.error(
                f"windows dynamic dim {d} of {value.type}; accy windows static dims only"
            )


@irdl_op_definition
class ReduceWindowOp(AccyOperation):
    """`%r = accy.reduce_window (%x : tensor<4x16x16x8xf32>) init (%m : tensor<f32>),
    window = [1, 2, 2, 1], strides = [1, 2, 2, 1], base_dilations = [1, 1, 1, 1],
    window_dilations = [1, 1, 1, 1], padding_low = [0, 0, 0, 0], padding_high = [0, 0, 0,
    0] -> (tensor<4x8x8x8xf32>) ({^bb0(%a: tensor<f32>, %b: tensor<f32>): ... accy.yield
    %c : tensor<f32>})` (a 2x2 max pool).

    StableHLO's reduce_window: N operands of one static shape, each dilated by
    `base_dilations` and padded by `padding_low`/`padding_high` with its init (the holes
    of the dilation too); result element `o` folds, from the N rank-0 inits, the window
    of `window` elements that starts at `o * strides`, its elements `window_dilations`
    apart, in row-major order of the window (the body takes the N accumulated values,
    then the N elements).
    """

    name = "accy.reduce_window"

    inputs = var_operand_def(AccyTensor)
    inits = var_operand_def(AccyTensor)
    window_dimensions = prop_def(DenseArrayBase.constr(i64))
    window_strides = prop_def(DenseArrayBase.constr(i64))
    base_dilations = prop_def(DenseArrayBase.constr(i64))
    window_dilations = prop_def(DenseArrayBase.constr(i64))
    padding_low = prop_def(DenseArrayBase.constr(i64))
    padding_high = prop_def(DenseArrayBase.constr(i64))
    body = region_def("single_block")
    res = var_result_def(AccyTensor)

    traits = traits_def(Pure(), EndsWithYield())
    custom_directives = (DimList,)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "`(` $inputs `:` type($inputs) `)` `init` `(` $inits `:` type($inits) `)` `,` "
        "`window` `=` custom<DimList>($window_dimensions) `,` "
        "`strides` `=` custom<DimList>($window_strides) `,` "
        "`base_dilations` `=` custom<DimList>($base_dilations) `,` "
        "`window_dilations` `=` custom<DimList>($window_dilations) `,` "
        "`padding_low` `=` custom<DimList>($padding_low) `,` "
        "`padding_high` `=` custom<DimList>($padding_high) "
        "attr-dict `->` `(` type($res) `)` $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        inits: Sequence[SSAValue],
        body: Region,
        *,
        window: Sequence[int],
        strides: Sequence[int],
        base_dilations: Sequence[int],
        window_dilations: Sequence[int],
        padding_low: Sequence[int],
        padding_high: Sequence[int],
    ):
        shapes = []
        for value in inputs:
            assert isinstance(value.type, TensorType)
            sizes = [
                window_positions(n, *parts)
                for n, *parts in zip(
                    value.type.get_shape(),
                    window,
                    strides,
                    base_dilations,
                    window_dilations,
                    padding_low,
                    padding_high,
                )
            ]
            shapes.append(TensorType(value.type.get_element_type(), sizes))
        lists = {
            "window_dimensions": window,
            "window_strides": strides,
            "base_dilations": base_dilations,
            "window_dilations": window_dilations,
            "padding_low": padding_low,
            "padding_high": padding_high,
        }
        super().__init__(
            operands=[inputs, inits],
            result_types=[shapes],
            properties={k: DenseArrayBase.from_list(i64, list(v)) for k, v in lists.items()},
            regions=[body],
        )

    def window_list(self, name: str) -> tuple[int, ...]:
        """One of the window attributes, by property name."""
        return _dims_of(getattr(self, name))

    def result_shape(self) -> list[int]:
        parts = [
            self.window_list(name)
            for name in (
                "window_dimensions",
                "window_strides",
                "base_dilations",
                "window_dilations",
                "padding_low",
                "padding_high",
            )
        ]
        shape = self.inputs[0].type.get_shape()
        return [window_positions(n, *p) for n, *p in zip(shape, *parts)]

    def verify_(self) -> None:
        shape = _verify_operands_inits_results(self, "reduces")
        _verify_window_lists(
            self,
            len(shape),
            {
                name: self.window_list(name)
                for name in (
                    "window_dimensions",
                    "window_strides",
                    "base_dilations",
                    "window_dilations",
                    "padding_low",
                    "padding_high",
                )
            },
        )
        _static_windows(
            self,
            self.inputs[0],
            self.window_list("window_dimensions"),
            self.window_list("window_strides"),
            [self.window_list("base_dilations"), self.window_list("window_dilations")],
            [self.window_list("padding_low"), self.window_list("padding_high")],
        )
        elements = [v.type.get_element_type() for v in self.inputs]
        for index, (init, element) in enumerate(zip(self.inits, elements)):
            if init.type != TensorType(element, []):
                raise self.error(f"init #{index} must be a tensor<{element}>, got {init.type}")
        expected = self.result_shape()
        for index, (result, element) in enumerate(zip(self.res, elements)):
            if result.type != TensorType(element, expected):
                raise self.error(
                    f"result #{index} must be a {TensorType(element, expected)}, got {result.type}"
                )
        _verify_scalar_body(self, self.body, elements * 2, elements, "body")


@irdl_op_definition
class SelectAndScatterOp(AccyOperation):
    """`%r = accy.select_and_scatter %x, %s, %zero, window = [2, 2], strides = [2, 2],
    padding_low = [0, 0], padding_high = [0, 0] : (tensor<4x4xf32>, tensor<2x2xf32>,
    tensor<f32>) -> tensor<4x4xf32> ({select}, {scatter})` (the gradient of a max pool).

    StableHLO's select_and_scatter: for each window of the operand (`window` elements
    placed `strides` apart in the operand padded by `padding_low`/`padding_high`), the
    select region picks one operand element among the window's elements inside the
    operand, in row-major order (the first is picked; a later element `e` replaces the
    picked `p` when `select(p, e)` is false); the window's element of `source` (one per
    window) is scattered there. Each result element starts at the rank-0 `init` and
    combines the source elements scattered to it with the scatter region.
    """

    name = "accy.select_and_scatter"

    operand = operand_def(AccyTensor)
    source = operand_def(AccyTensor)
    init = operand_def(AccyTensor)
    window_dimensions = prop_def(DenseArrayBase.constr(i64))
    window_strides = prop_def(DenseArrayBase.constr(i64))
    padding_low = prop_def(DenseArrayBase.constr(i64))
    padding_high = prop_def(DenseArrayBase.constr(i64))
    select = region_def("single_block")
    scatter = region_def("single_block")
    result = result_def(AccyTensor)

    traits = traits_def(Pure(), EndsWithYield())
    custom_directives = (DimList,)

    assembly_format = (
        "$operand `,` $source `,` $init `,` "
        "`window` `=` custom<DimList>($window_dimensions) `,` "
        "`strides` `=` custom<DimList>($window_strides) `,` "
        "`padding_low` `=` custom<DimList>($padding_low) `,` "
        "`padding_high` `=` custom<DimList>($padding_high) "
        "attr-dict `:` functional-type(operands, results) $select $scatter"
    )

    def __init__(
        self,
        operand: SSAValue,
        source: SSAValue,
        init: SSAValue,
        select: Region,
        scatter: Region,
        *,
        window: Sequence[int],
        strides: Sequence[int],
        padding_low: Sequence[int],
        padding_high: Sequence[int],
    ):
        lists = {
            "window_dimensions": window,
            "window_strides": strides,
            "padding_low": padding_low,
            "padding_high": padding_high,
        }
        operand_type = operand.type
        assert isinstance(operand_type, TensorType)
        super().__init__(
            operands=[operand, source, init],
            result_types=[operand_type],
            properties={k: DenseArrayBase.from_list(i64, list(v)) for k, v in lists.items()},
            regions=[select, scatter],
        )

    def window_list(self, name: str) -> tuple[int, ...]:
        """One of the window attributes, by property name."""
        return _dims_of(getattr(self, name))

    def verify_(self) -> None:
        shape = self.operand.type.get_shape()
        lists = {
            name: self.window_list(name)
            for name in ("window_dimensions", "window_strides", "padding_low", "padding_high")
        }
        _verify_window_lists(self, len(shape), lists)
        _static_windows(
            self,
            self.operand,
            lists["window_dimensions"],
            lists["window_strides"],
            [],
            [lists["padding_low"], lists["padding_high"]],
        )
        element = self.operand.type.get_element_type()
        for what, value in (("source", self.source), ("init", self.init), ("result", self.result)):
            if value.type.get_element_type() != element:
                raise self.error(f"{what} type {value.type} differs from the operand's {element}")
        if self.init.type.get_num_dims() != 0:
            raise self.error(f"init must be a tensor<{element}>, got {self.init.type}")
        if self.result.type != self.operand.type:
            raise self.error(f"result type {self.result.type} differs from the operand's")
        expected = [
            window_positions(n, w, s, 1, 1, lo, hi)
            for n, w, s, lo, hi in zip(shape, *lists.values())
        ]
        if not shapes_compatible(self.source.type.get_shape(), expected):
            raise self.error(
                f"source shape {format_shape(self.source.type.get_shape())} differs from the "
                f"operand's windows {format_shape(expected)}"
            )
        _verify_scalar_body(self, self.select, [element] * 2, [IntegerType(1)], "select")
        _verify_scalar_body(self, self.scatter, [element] * 2, [element], "scatter")


CONVOLUTION_LISTS = (
    "lhs_dims",
    "rhs_dims",
    "result_dims",
    "window_strides",
    "padding_low",
    "padding_high",
    "lhs_dilation",
    "rhs_dilation",
)
"""The list properties of `accy.convolution` that decide its result shape."""


def convolution_shape(
    lhs: Sequence[int],
    rhs: Sequence[int],
    *,
    lhs_dims: Sequence[int],
    rhs_dims: Sequence[int],
    result_dims: Sequence[int],
    window_strides: Sequence[int],
    padding_low: Sequence[int],
    padding_high: Sequence[int],
    lhs_dilation: Sequence[int],
    rhs_dilation: Sequence[int],
    batch_groups: int = 1,
) -> list[int]:
    """The result shape of a convolution of an input of shape `lhs` by a kernel of shape
    `rhs` (see `accy.convolution` for the layouts)."""
    lb, _lf, *ls = lhs_dims
    _ri, ro, *rs = rhs_dims
    ob, of, *os = result_dims
    shape = [0] * len(result_dims)
    shape[ob] = lhs[lb] // batch_groups if lhs[lb] != DYNAMIC_INDEX else DYNAMIC_INDEX
    shape[of] = rhs[ro]
    for d, l_dim, r_dim, stride, lhs_dil, rhs_dil, low, high in zip(
        os, ls, rs, window_strides, lhs_dilation, rhs_dilation, padding_low, padding_high
    ):
        shape[d] = window_positions(lhs[l_dim], rhs[r_dim], stride, lhs_dil, rhs_dil, low, high)
    return shape


@irdl_op_definition
class ConvolutionOp(AccyOperation):
    """`%r = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1],
    result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [1, 1], padding_high =
    [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0],
    feature_groups = 1, batch_groups = 1 : (tensor<4x16x16x8xf32>, tensor<3x3x8x16xf32>)
    -> tensor<4x16x16x16xf32>` (a 3x3 NHWC/HWIO convolution, "SAME" padding).

    StableHLO's convolution. The layouts name dims: `lhs_dims` the input's batch, feature
    and spatial dims, `rhs_dims` the kernel's input feature, output feature and spatial
    dims, `result_dims` the result's batch, feature and spatial dims. The input is
    dilated by `lhs_dilation` (zeros in the holes) and padded with zeros by
    `padding_low`/`padding_high` (negative pads crop); the kernel's spatial dims are
    reversed where `reversal` is 1 and dilated by `rhs_dilation`; result element (b, o,
    s) sums input(b', i', s * strides + k) * kernel(i, o, k) over the kernel's input
    features i and window positions k, in the result's element type. With
    `feature_groups` g > 1 the input features and the output features split into g
    groups (output feature o reads input feature group o / (outputs / g): i' = group *
    inputs per group + i); with `batch_groups` g > 1 the input batch and the output
    features split into g groups (b' = group * result batch + b).
    """

    name = "accy.convolution"

    lhs = operand_def(AccyTensor)
    rhs = operand_def(AccyTensor)
    lhs_dims = prop_def(DenseArrayBase.constr(i64))
    rhs_dims = prop_def(DenseArrayBase.constr(i64))
    result_dims = prop_def(DenseArrayBase.constr(i64))
    window_strides = prop_def(DenseArrayBase.constr(i64))
    padding_low = prop_def(DenseArrayBase.constr(i64))
    padding_high = prop_def(DenseArrayBase.constr(i64))
    lhs_dilation = prop_def(DenseArrayBase.constr(i64))
    rhs_dilation = prop_def(DenseArrayBase.constr(i64))
    window_reversal = prop_def(DenseArrayBase.constr(i64))
    feature_group_count = prop_def(IntegerAttr.constr(type=i64))
    batch_group_count = prop_def(IntegerAttr.constr(type=i64))
    result = result_def(AccyTensor)

    traits = traits_def(Pure())
    custom_directives = (DimList,)

    assembly_format = (
        "$lhs `,` $rhs `,` `lhs_dims` `=` custom<DimList>($lhs_dims) `,` "
        "`rhs_dims` `=` custom<DimList>($rhs_dims) `,` "
        "`result_dims` `=` custom<DimList>($result_dims) `,` "
        "`strides` `=` custom<DimList>($window_strides) `,` "
        "`padding_low` `=` custom<DimList>($padding_low) `,` "
        "`padding_high` `=` custom<DimList>($padding_high) `,` "
        "`lhs_dilation` `=` custom<DimList>($lhs_dilation) `,` "
        "`rhs_dilation` `=` custom<DimList>($rhs_dilation) `,` "
        "`reversal` `=` custom<DimList>($window_reversal) `,` "
        "`feature_groups` `=` $feature_group_count `,` `batch_groups` `=` $batch_group_count "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        *,
        lhs_dims: Sequence[int],
        rhs_dims: Sequence[int],
        result_dims: Sequence[int],
        strides: Sequence[int],
        padding_low: Sequence[int],
        padding_high: Sequence[int],
        lhs_dilation: Sequence[int],
        rhs_dilation: Sequence[int],
        reversal: Sequence[int],
        feature_groups: int = 1,
        batch_groups: int = 1,
        result_type: TensorType,
    ):
        lists = {
            "lhs_dims": lhs_dims,
            "rhs_dims": rhs_dims,
            "result_dims": result_dims,
            "window_strides": strides,
            "padding_low": padding_low,
            "padding_high": padding_high,
            "lhs_dilation": lhs_dilation,
            "rhs_dilation": rhs_dilation,
            "window_reversal": [int(bool(r)) for r in reversal],
        }
        properties: dict[str, Attribute] = {
            k: DenseArrayBase.from_list(i64, list(v)) for k, v in lists.items()
        }
        properties["feature_group_count"] = IntegerAttr(feature_groups, i64)
        properties["batch_group_count"] = IntegerAttr(batch_groups, i64)
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties=properties)

    def window_list(self, name: str) -> tuple[int, ...]:
        """One of the list attributes, by property name."""
        return _dims_of(getattr(self, name))

    @property
    def feature_groups(self) -> int:
        return self.feature_group_count.value.data

    @property
    def batch_groups(self) -> int:
        return self.batch_group_count.value.data

    def expected_shape(self) -> list[int]:
        """The result shape the operands and window attributes give."""
        return convolution_shape(
            self.lhs.type.get_shape(),
            self.rhs.type.get_shape(),
            batch_groups=self.batch_groups,
            **{name: self.window_list(name) for name in CONVOLUTION_LISTS},
        )

    def verify_(self) -> None:
        lhs, rhs = self.lhs.type.get_shape(), self.rhs.type.get_shape()
        rank = len(lhs)
        if rank < 2 or len(rhs) != rank or self.result.type.get_num_dims() != rank:
            raise self.error(
                f"takes an input, a kernel and a result of one rank of at least 2, got "
                f"{format_shape(lhs)}, {format_shape(rhs)} and "
                f"{format_shape(self.result.type.get_shape())}"
            )
        for name in ("lhs_dims", "rhs_dims", "result_dims"):
            dims = self.window_list(name)
            if sorted(dims) != list(range(rank)):
                raise self.error(f"{name} {list(dims)} is not a permutation of the {rank} dims")
        lists = {
            name: self.window_list(name)
            for name in (
                "window_strides",
                "padding_low",
                "padding_high",
                "lhs_dilation",
                "rhs_dilation",
                "window_reversal",
            )
        }
        for name, values in lists.items():
            if len(values) != rank - 2:
                raise self.error(f"{name} has {len(values)} entries for {rank - 2} spatial dims")
            if name.endswith(("strides", "dilation")) and any(v < 1 for v in values):
                raise self.error(f"{name} {list(values)} must be positive")
            if name == "window_reversal" and any(v not in (0, 1) for v in values):
                raise self.error(f"reversal {list(values)} must hold 0 or 1 per spatial dim")
        features, batch = self.feature_groups, self.batch_groups
        if features < 1 or batch < 1 or (features > 1 and batch > 1):
            raise self.error(
                f"feature_groups {features} and batch_groups {batch} must be positive and "
                "not both above 1"
            )
        lb, lf = self.window_list("lhs_dims")[:2]
        ri, ro = self.window_list("rhs_dims")[:2]
        dynamic = [d for d, n in enumerate(lhs) if n == DYNAMIC_INDEX]
        if (
            not self.rhs.type.has_static_shape()
            or dynamic not in ([], [lb])
            or (dynamic and batch > 1)
        ):
            raise self.error(
                f"takes {self.lhs.type} and {self.rhs.type}; accy convolves static shapes "
                "(the input's batch dim may be dynamic, without batch groups)"
            )
        if lhs[lf] != rhs[ri] * features:
            raise self.error(
                f"input features {lhs[lf]} differ from the kernel's input features {rhs[ri]} "
                f"times feature_groups {features}"
            )
        if rhs[ro] % (features * batch):
            raise self.error(
                f"kernel output features {rhs[ro]} are not divisible by the groups "
                f"{features * batch}"
            )
        if lhs[lb] != DYNAMIC_INDEX and lhs[lb] % batch:
            raise self.error(f"input batch {lhs[lb]} is not divisible by batch_groups {batch}")
        element = self.lhs.type.get_element_type()
        result_element = self.result.type.get_element_type()
        if self.rhs.type.get_element_type() != element:
            raise self.error(
                f"input and kernel element types differ ({self.lhs.type}, {self.rhs.type})"
            )
        if is_float(element) != is_float(result_element) or is_bool(result_element) != is_bool(
            element
        ):
            raise self.error(
                f"computes {element} operands into {result_element}; accy converts within "
                "floats or within integers"
            )
        expected = self.expected_shape()
        if list(self.result.type.get_shape()) != expected:
            raise self.error(
                f"result shape {format_shape(self.result.type.get_shape())} differs from "
                f"the expected {format_shape(expected)}"
            )


# ---------------------------------------------------------------------------------------
# Counted loops
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(AccyOperation):
    """`accy.yield %a, %b : T0, T1`: the values carried to the next iteration."""

    name = "accy.yield"

    values = var_operand_def(AccyTensor)

    traits = traits_def(IsTerminator(), NoMemoryEffect(), YieldParent())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class IterateOp(AccyOperation):
    """A counted loop: `%r:2 = accy.iterate 5 iter_args(%p = %a, %q = %b) : T0, T1 { ... }`.

    The body runs `trip_count` times; block argument `i` holds carried value `i`, the
    `accy.yield` gives the next values, and the results are the values after the last
    iteration (the initial values when the trip count is 0).
    """

    name = "accy.iterate"

    trip_count = prop_def(IntegerAttr.constr(type=i64))
    inits = var_operand_def(AccyTensor)
    body = region_def("single_block")
    res = var_result_def(AccyTensor)

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), EndsWithYield())

    def __init__(self, trip_count: int, inits: Sequence[SSAValue], body: Region):
        super().__init__(
            operands=[inits],
            result_types=[[v.type for v in inits]],
            properties={"trip_count": IntegerAttr(trip_count, i64)},
            regions=[body],
        )

    def verify_(self) -> None:
        if self.trip_count.value.data < 0:
            raise self.error(f"trip count {self.trip_count.value.data} is negative")
        init_types = [v.type for v in self.inits]
        arg_types = [a.type for a in self.body.block.args]
        result_types = [r.type for r in self.res]
        if not init_types == arg_types == result_types:
            raise self.error("iter_args, block arguments and results must have the same types")
        terminator = self.body.block.last_op
        if isinstance(terminator, YieldOp):
            yielded = [v.type for v in terminator.values]
            if yielded != result_types:
                raise self.error(
                    f"yields {len(yielded)} values of types "
                    f"({', '.join(map(str, yielded))}) but carries "
                    f"({', '.join(map(str, result_types))})"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.trip_count.value.data} iter_args(")
        printer.print_list(
            zip(self.body.block.args, self.inits),
            lambda pair: (
                printer.print_ssa_value(pair[0]),
                printer.print_string(" = "),
                printer.print_ssa_value(pair[1]),
            ),
        )
        printer.print_string(") : ")
        printer.print_list((v.type for v in self.inits), printer.print_attribute)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> IterateOp:
        trip_count = _parse_i64(parser, allow_negative=False)
        parser.parse_keyword("iter_args")
        pos = parser.pos

        def parse_assignment() -> tuple[Parser.UnresolvedArgument, object]:
            argument = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            return argument, parser.parse_unresolved_operand()

        pairs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_assignment)
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(pairs):
            parser.raise_error(
                f"expected {len(pairs)} types for the iter_args, got {len(types)}", pos
            )
        inits = parser.resolve_operands([p[1] for p in pairs], types, pos)
        arguments = [p[0].resolve(t) for p, t in zip(pairs, types)]
        body = parser.parse_region(arguments)
        op = cls(trip_count, inits, body)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


@irdl_op_definition
class WhileOp(AccyOperation):
    """A loop while a condition holds: `%r = accy.while (%x : tensor<4xf32>) ->
    (tensor<4xf32>) cond {^bb0(%c: tensor<4xf32>): ... accy.yield %more : tensor<i1>} do
    {^bb0(%b: tensor<4xf32>): ... accy.yield %next : tensor<4xf32>}`.

    Both regions take the carried values (starting at the inits): `cond` computes whether
    to run `body` once more (a `tensor<i1>`), `body` the next carried values; the results
    are the carried values once `cond` is false (the inits when it is false at once).
    """

    name = "accy.while"

    traits = traits_def(EndsWithYield())

    inits = var_operand_def(AccyTensor)
    cond = region_def("single_block")
    body = region_def("single_block")
    res = var_result_def(AccyTensor)

    assembly_format = (
        "`(` $inits `:` type($inits) `)` attr-dict `->` `(` type($res) `)` `cond` $cond `do` $body"
    )

    def __init__(self, inits: Sequence[SSAValue], cond: Region, body: Region):
        super().__init__(
            operands=[inits], result_types=[[v.type for v in inits]], regions=[cond, body]
        )

    def verify_(self) -> None:
        carried = [v.type for v in self.inits]
        if [r.type for r in self.res] != carried:
            raise self.error("inits and results must have the same types")
        for name, region in (("cond", self.cond), ("body", self.body)):
            if [a.type for a in region.block.args] != carried:
                raise self.error(
                    f"{name} must take the carried values ({', '.join(map(str, carried))})"
                )
        terminator = self.cond.block.last_op
        predicate = TensorType(IntegerType(1), [])
        if not isinstance(terminator, YieldOp) or [v.type for v in terminator.values] != [
            predicate
        ]:
            raise self.error("cond must end in an accy.yield of one tensor<i1>")
        terminator = self.body.block.last_op
        if not isinstance(terminator, YieldOp) or [v.type for v in terminator.values] != carried:
            raise self.error(
                f"body must end in an accy.yield of the carried values "
                f"({', '.join(map(str, carried))})"
            )


LOOP_OPS = (IterateOp, WhileOp)
"""The loops: host loops over the work items of their regions."""


DONATED = "accy.donated"

ADDRESSABLE_BYTES = 2**48
"""The most bytes one tensor or one arena may take: the virtual address space of x86-64
and of CUDA devices (sizes beyond it would also overflow the i64 byte offsets of lowering)."""
"""The argument attribute (a unit attribute, `%a: tensor<4xf32> {accy.donated}`) of a
parameter whose buffer the caller donates: the planner may then let an elementwise output
take the parameter's buffer over in place (see `passes/arena_plan.py`), as JAX's
`donate_argnums` lets XLA do."""


def donated_parameters(function: FuncOp) -> tuple[bool, ...]:
    """For each parameter of `function`, whether it is donated."""
    count = len(function.function_type.inputs)
    if function.arg_attrs is None:
        return (False,) * count
    return tuple(DONATED in entries.data for entries in function.arg_attrs.data)


def verify_program_function(function: FuncOp) -> None:
    """What makes a `func.func` an accy program the planner can take, beyond func's own
    rules: it sits directly in the module, has a body, takes and returns ranked tensors of
    accy element types (`AccyTensor`), and marks donated parameters with a unit attribute.
    (Lowered modules hold upstream functions on memrefs: they verify, but are no program.)
    Raises `VerifyException`."""
    if not isinstance(function.parent_op(), ModuleOp):
        raise VerifyException(
            f"@{function.sym_name.data} is nested in '{function.parent_op().name}'; accy "
            "functions sit directly in the module"
        )
    if not function.body.blocks:
        raise VerifyException(
            f"@{function.sym_name.data} is a declaration; accy compiles functions with a body"
        )
    if len(function.body.blocks) != 1 or not isinstance(function.body.block.last_op, ReturnOp):
        raise VerifyException(
            f"the body of @{function.sym_name.data} is not one block ending in func.return"
        )
    signature = function.function_type
    for what, types in (("argument", signature.inputs), ("result", signature.outputs)):
        for index, t in enumerate(types):
            if isinstance(t, MemRefType):
                raise VerifyException(
                    f"{what} #{index} has type {t}: a lowered function (accy-lower made it); "
                    "accy plans programs on tensors, before lowering"
                )
            try:
                AccyTensor.verify(t, VerificationContext())
            except VerifyException:
                raise VerifyException(
                    f"{what} #{index} has type {t}; accy functions take and return ranked "
                    f"tensors of {ELEMENT_TYPE_NAMES}"
                ) from None
    verify_parameter_attributes(function)
    for what, types in (("argument", signature.inputs), ("result", signature.outputs)):
        for index, t in enumerate(types):
            if (size := static_bytes(t)) > ADDRESSABLE_BYTES:
                raise VerifyException(
                    f"{what} #{index} of type {t} takes {size} bytes; accy addresses at most "
                    f"{ADDRESSABLE_BYTES} bytes (2**48)"
                )


def static_bytes(t: TensorType) -> int:
    """The bytes of a tensor's static dims (a dynamic dim counts as 1)."""
    bits = t.get_element_type().bitwidth
    count = prod(max(d, 1) for d in t.get_shape())
    return count * max(1, (bits + 7) // 8)


def verify_parameter_attributes(function: FuncOp) -> None:
    """Raise `VerifyException` where a parameter's `DONATED` is not a unit attribute."""
    if function.arg_attrs is None:
        return
    for index, entries in enumerate(function.arg_attrs.data):
        donated = entries.data.get(DONATED)
        if donated is not None and not isinstance(donated, UnitAttr):
            raise VerifyException(
                f"argument #{index} has {DONATED} = {donated}; it is a unit attribute, "
                f"written {{{DONATED}}}"
            )
