"""Fusion plan: which ops run together in one kernel.

A *fusible* op is elementwise (including compare, select and convert), a
`broadcast_in_dim`, a `reshape`, a `slice`, a `reverse`, a `pad`, a `dynamic_slice` or
`dynamic_update_slice`, a `gather` or an `iota`. A fusible producer joins a group
when its result is not returned (a `func.return` or `accy.yield` use is a use of its own)
and either

- it has one consumer op (`multiply %x, %x` is one), a fusible op, an `accy.reduce` (a
  reduction takes a fused elementwise prologue) or an `accy.fold` (an argmax computes its
  iota of positions as it folds) or an `accy.scatter` (which computes its inputs as it
  copies them and its indices and updates as it combines) or an `accy.sort` (which
  computes its operands as it first reads them: the positions an argsort carries) or an
  `accy.reduce_window`
  whose windows do not overlap (a pool computes each element of its operand once: the
  batch norm and activation before it) in the same block: it joins that consumer's
  group; or
- it has several consumer ops, all pointwise (or the `accy.reduce` root) in the same
  block and all in one group: it joins that group. The group computes it once per
  element, at the index its pointwise consumers share, instead of storing it and
  loading it back (GELU's `x + b` feeds five ops of one chain).

A widening `convert` (bf16 or f16 to f32, f32 to f64, i8 to i32...) whose one consumer op
is a `dot_general` joins the dot's group as its *operand prologue* (`dot_operand_source`):
the product reads the narrow value and extends each element as it loads it (exact), as
mixed-precision layers are written (`preferred_element_type`), without a wide copy of the
operand. A prologue takes no producers: the narrow value is stored (a product's epilogue,
an elementwise kernel) and the product loads it.

A `dot_general` or a convolution joins its consumers' group as its *epilogue* (bias, scale,
batch norm, activation, residual add computed on each element as the product is stored)
when its consumer ops all belong to one group and every op of that group from them on is
elementwise on the product's shape (`epilogue_root`; the root's element type may differ: a
mixed-precision layer's bias, activation and convert to bf16 store the narrow value); the
group is then a `dot` or `convolution` work item whose root is the epilogue's last op
(`contraction_of` finds the product among its members).

An *attention* group computes softmax(Q K^T) V one score row at a time, never storing
the scores (`attention_chain`): a `dot_general` (the *values product*) whose operand P is
computed from a *scores product* S only through elementwise ops, broadcasts and reshapes
between S's shape, its row shape (S's without its last dim, the keys) and the row shape
with a trailing 1, and reductions of S-shaped values over the keys, takes all of them into
its group when the keys are the scores product's one rhs free dim, the values product
contracts P's keys, both products have batch dims (heads: a layer's weights shared by
every row is no attention) and nothing of the chain is read outside it; its other operands
(masks, biases, scales) fuse as producers do. The group is an `attention` work item.

Every other op that computes (transpose, dot_general, reduce, scan, iterate, convolution,
select_and_scatter, reduce_window) roots its own group; constants belong to no group (they are data, not work).

Dead ops belong to no group either (`FusionPlan.dead`): an accy op is *dead* when no live
op uses its results (all accy ops are pure), decided backwards through each block, where
`func.return` and `accy.yield` are live and a use inside the body of a live
`accy.iterate` counts as live (conservatively, without looking into the body first); the
body of a dead `accy.iterate` is dead with it. A dead op gets no work item and no slot;
the module is not changed (`accy-eliminate-dead-code` erases dead ops from the IR).

Invariants: groups partition the live computing ops of each block; a group's root is its last
member in program order and the only member whose results leave the group; the results
of the other members are *elided*: they never get storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_add,
    checked_mul,
)
from accy.passes.dot_layout import free_dims
from accy.passes.element_types import shape_of
from accy.passes.options import PlanOptions
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute, Block, Operation, SSAValue

POINTWISE = (
    ops.ElementwiseBinaryOperation,
    ops.ElementwiseUnaryOperation,
    ops.CompareOp,
    ops.IsFiniteOp,
    ops.SelectOp,
    ops.ConvertOp,
    ops.BitcastConvertOp,
    ops.ReshapeOp,
)
"""Ops whose output element i reads only element i of each operand (row-major)."""

FUSIBLE = (
    *POINTWISE,
    ops.BroadcastInDimOp,
    ops.SliceOp,
    ops.ReverseOp,
    ops.PadOp,
    ops.DynamicSliceOp,
    ops.DynamicUpdateSliceOp,
    ops.GatherOp,
    ops.IotaOp,
)
"""Ops that fuse into a consumer's group (see the module docstring): each output element
is computed from operand elements found by index arithmetic."""

FUSING_CONSUMERS = (*FUSIBLE, ops.ReduceOp, ops.FoldOp, ops.ScatterOp, ops.SortOp)
"""Ops that take a fusible producer into their kernel."""


def disjoint_windows(op: ops.ReduceWindowOp) -> bool:
    """Whether no two windows of the reduce_window share an operand element (no base
    dilation, each window's extent at most its stride)."""
    return all(
        base == 1 and (window - 1) * dilation + 1 <= stride
        for window, stride, dilation, base in zip(
            op.window_list("window_dimensions"),
            op.window_list("window_strides"),
            op.window_list("window_dilations"),
            op.window_list("base_dilations"),
        )
    )


EPILOGUE_OPS = tuple(t for t in POINTWISE if t is not ops.ReshapeOp)
"""Ops an epilogue may hold: element i of the result from element i of each operand, on
one shape (no reshape)."""

CONTRACTIONS = (ops.DotGeneralOp, ops.ConvolutionOp)
"""Ops that take an epilogue (see the module docstring)."""


def epilogue_root(
    op: ops.DotGeneralOp | ops.ConvolutionOp,
    root_of: dict[Operation, Operation],
    dead: frozenset[Operation] | set[Operation],
    contracted: frozenset[Operation] | set[Operation] = frozenset(),
) -> Operation | None:
    """The root of the group whose epilogue the contraction `op` joins (see the module
    docstring), or None when it roots its own group; never a group in `contracted` (the
    roots of groups that hold a contraction already: a group computes one product)."""
    consumers = {use.operation for use in op.results[0].uses} - set(dead)
    if not consumers or any(c.parent is not op.parent or c not in root_of for c in consumers):
        return None
    roots = {root_of[c] for c in consumers}
    if len(roots) != 1:
        return None
    (root,) = roots
    if root in contracted:
        return None
    shape = op.results[0].type.get_shape()
    pending, seen = list(consumers), set()
    while pending:
        user = pending.pop()
        if user in seen:
            continue
        seen.add(user)
        if not isinstance(user, EPILOGUE_OPS) or user.results[0].type.get_shape() != shape:
            return None
        if user is root:
            continue
        pending.extend(u.operation for u in user.results[0].uses if u.operation not in dead)
    return root


def contraction_of(members: Sequence[Operation]) -> ops.DotGeneralOp | ops.ConvolutionOp | None:
    """The dot_general or convolution among a group's `members` (its root, or the op
    whose epilogue the root ends), or None (also for an attention group: two products)."""
    products = [m for m in members if isinstance(m, CONTRACTIONS)]
    return products[0] if len(products) == 1 else None


def attention_products(
    members: Sequence[Operation],
) -> tuple[ops.DotGeneralOp, ops.DotGeneralOp] | None:
    """An attention group's scores product and values product (in program order), or None
    for any other group (see `attention_chain`)."""
    products = [m for m in members if isinstance(m, ops.DotGeneralOp)]
    if len(products) != 2:
        return None
    return products[0], products[1]  # type: ignore[return-value]


ATTENTION_KEYS = 8192
"""The most keys (the scores' last dim) an attention group takes: a CPU thread holds one
row of scores on its stack."""

ATTENTION_TYPES = (Float32Type, Float64Type)
"""The element types an attention group's products have (both the same)."""

CHAIN_OPS = (*EPILOGUE_OPS, ops.ReshapeOp, ops.BroadcastInDimOp, ops.ReduceOp)
"""Ops an attention chain may hold besides its scores product."""

ATTENTION_CHAIN_OPS = 64
"""The most ops `attention_chain` walks back from a product (a masked softmax is about 20):
a longer chain is no attention, and the walk's cost per product stays constant."""


def attention_chain(
    product: ops.DotGeneralOp,
    dead: frozenset[Operation] | set[Operation] = frozenset(),
    meter: WorkMeter | None = None,
) -> frozenset[Operation] | None:
    """The ops from the scores product up to the probabilities that the values product
    `product` reads (see the module docstring), which join `product`'s group, or None when
    `product` is no attention's values product. Each chain value has the scores' shape S,
    the row shape S[:-1] or S[:-1] + [1], and is read only where a one-row-at-a-time kernel
    has it: a reduction reduces an S-shaped value over the keys, a broadcast or a reshape
    moves a row value to a row shape or to S by its leading dims."""
    element = product.result.type.get_element_type()
    if not isinstance(element, ATTENTION_TYPES):
        return None
    for side, probabilities in enumerate((product.lhs, product.rhs)):
        contracting = product.contracting[side]
        rank = len(probabilities.type.get_shape())
        if rank >= 2 and list(contracting) == [rank - 1]:
            chain = _softmax_chain(probabilities, product, element, dead, meter)
            if chain is not None:
                return chain
    return None


def _softmax_chain(
    probabilities: SSAValue,
    product: ops.DotGeneralOp,
    element: Attribute,
    dead: frozenset[Operation] | set[Operation],
    meter: WorkMeter | None,
) -> frozenset[Operation] | None:
    """`attention_chain` for one operand of `product` taken as the probabilities (at most
    `ATTENTION_CHAIN_OPS` visits, each charged to `meter`)."""
    block = product.parent
    shape = tuple(probabilities.type.get_shape())  # type: ignore[attr-defined]
    rows = (shape[:-1], (*shape[:-1], 1))
    reached: set[Operation] = set()
    scores: set[Operation] = set()
    pending = [probabilities.owner]
    for _ in range(ATTENTION_CHAIN_OPS):  # the chain-able ops P is computed from
        if not pending:
            break
        if meter is not None:
            meter.visit()
        op = pending.pop()
        if not isinstance(op, Operation) or op.parent is not block or op in reached:
            continue
        if tuple(op.results[0].type.get_shape()) not in (*rows, shape):  # type: ignore[attr-defined]
            continue
        if isinstance(op, ops.DotGeneralOp):
            scores.add(op)
            if len(scores) > 1:  # no attention: stop before walking a residual stream
                return None
        elif isinstance(op, CHAIN_OPS):
            reached.add(op)
            pending.extend(operand.owner for operand in op.operands)  # type: ignore[misc]
    if pending or len(scores) != 1 or is_operand_prologue(probabilities.owner):  # type: ignore[arg-type]
        return None
    (first,) = scores
    chain = _depending_on(first, reached)
    if (
        probabilities.owner not in chain
        or tuple(first.result.type.get_shape()) != shape
        or first.result.type.get_element_type() != element
        or probabilities.type.get_element_type() != element  # type: ignore[attr-defined]
        or not (first.batching[0] and product.batching[0])  # per head, not a layer's weights
        or not 0 < shape[-1] <= ATTENTION_KEYS
        or any(d == DYNAMIC_INDEX for d in shape)
        or len(free_dims(len(shape_of(first.rhs)), first.batching[1], first.contracting[1])) != 1
        or not any(isinstance(op, ops.ReduceOp) for op in chain)
    ):
        return None
    for op in chain:
        if not _row_wise(op, shape, rows):
            return None
        users = {use.operation for result in op.results for use in result.uses} - set(dead)
        outside = users - chain
        if outside and (op is not probabilities.owner or outside != {product}):
            return None
    other = product.rhs if product.lhs is probabilities else product.lhs
    if other.owner in chain:
        return None
    return chain


def _depending_on(first: Operation, reached: set[Operation]) -> frozenset[Operation]:
    """`first` and the ops of `reached` that read its result, directly or through others."""
    depends: dict[Operation, bool] = {first: True}
    for start in reached:
        stack = [start]
        while stack:
            op = stack[-1]
            if op in depends:
                stack.pop()
                continue
            owners = [o.owner for o in op.operands if o.owner in reached or o.owner is first]
            todo = [o for o in owners if o not in depends]
            if todo:
                stack.extend(todo)  # type: ignore[arg-type]
                continue
            depends[op] = any(depends[o] for o in owners)  # type: ignore[index]
            stack.pop()
    return frozenset(op for op, yes in depends.items() if yes)


def _row_wise(op: Operation, shape: tuple[int, ...], rows: tuple[tuple[int, ...], ...]) -> bool:
    """Whether chain op `op` reads its chain operands where a row-at-a-time kernel has
    them (see `attention_chain`)."""
    if isinstance(op, ops.DotGeneralOp):
        return True
    result = tuple(op.results[0].type.get_shape())  # type: ignore[attr-defined]
    if isinstance(op, ops.ReduceOp):
        operand = tuple(op.operand.type.get_shape())  # type: ignore[attr-defined]
        return operand == shape and list(op.dimensions.get_values()) == [len(shape) - 1]
    if isinstance(op, ops.BroadcastInDimOp):
        operand = tuple(op.operand.type.get_shape())  # type: ignore[attr-defined]
        dims = list(op.broadcast_dimensions.get_values())
        return operand in rows and result in (*rows, shape) and dims == list(range(len(operand)))
    if isinstance(op, ops.ReshapeOp):
        return tuple(op.operand.type.get_shape()) in rows and result in rows  # type: ignore[attr-defined]
    return result in (*rows, shape)


def widens(source: Attribute, result: Attribute) -> bool:
    """Whether converting element type `source` to `result` only widens it: a float to a
    wider float, an integer to a wider integer (sign- or zero-extended as `source` is
    signed or unsigned); exact either way."""
    if isinstance(source, AnyFloat) and isinstance(result, AnyFloat):
        return source.bitwidth < result.bitwidth
    if isinstance(source, IntegerType) and isinstance(result, IntegerType):
        return 1 < source.width.data < result.width.data
    return False


def dot_operand_source(value: SSAValue) -> SSAValue:
    """What a `dot_general` loads for its operand `value`: the operand of the widening
    `convert` (`widens`) that produced `value` when that convert's one consumer op is a
    `dot_general` of its block (its operand prologue, see the module docstring), else
    `value` itself."""
    op = value.owner
    if not isinstance(op, ops.ConvertOp):
        return value
    source, result = op.operand.type, op.result.type
    if not widens(source.get_element_type(), result.get_element_type()):  # type: ignore[attr-defined]
        return value
    consumers = {use.operation for use in op.result.uses}
    if len(consumers) != 1:
        return value
    (consumer,) = consumers
    if not isinstance(consumer, ops.DotGeneralOp) or consumer.parent is not op.parent:
        return value
    return op.operand


def is_operand_prologue(op: Operation) -> bool:
    """Whether `op` is a widening `convert` that a `dot_general` loads as its operand
    prologue (`dot_operand_source`)."""
    return isinstance(op, ops.ConvertOp) and dot_operand_source(op.result) is not op.result


def takes_producers(op: Operation) -> bool:
    """Whether `op` computes fusible producers into its kernel (see the module docstring).
    An operand prologue does not: the product loads its operand from a buffer."""
    if is_operand_prologue(op):
        return False
    if isinstance(op, ops.ReduceWindowOp):
        return disjoint_windows(op)
    return isinstance(op, FUSING_CONSUMERS)


DATA_OPS = (ops.ConstantOp, func.ReturnOp, ops.YieldOp)
"""Ops that do no work of their own."""


@dataclass(frozen=True)
class FusionGroup:
    """Ops that run as one kernel; `root` is last and produces the group's results."""

    root: Operation
    members: tuple[Operation, ...]

    @property
    def elided(self) -> tuple[SSAValue, ...]:
        return tuple(r for op in self.members if op is not self.root for r in op.results)


@dataclass(frozen=True)
class FusionPlan:
    """Groups in program order (per block, pre-order through nested regions)."""

    groups: tuple[FusionGroup, ...]
    group_of: dict[Operation, FusionGroup]
    dead: frozenset[Operation] = frozenset()
    """Dead ops (see the module docstring); ops nested in a dead op are not listed."""

    def is_dead(self, op: Operation) -> bool:
        """Whether `op` or an op it is nested in is dead."""
        current: Operation | None = op
        while current is not None and not isinstance(current, func.FuncOp):
            if current in self.dead:
                return True
            current = current.parent_op()
        return False

    @property
    def elided_values(self) -> tuple[SSAValue, ...]:
        return tuple(v for g in self.groups for v in g.elided)

    def is_elided(self, value: SSAValue) -> bool:
        owner = value.owner
        group = self.group_of.get(owner) if isinstance(owner, Operation) else None
        return group is not None and group.root is not owner


def is_live(op: Operation, live: set[Operation]) -> bool:
    """Whether `op` is live, given the `live` later ops of its block (see the module
    docstring): a terminator, an op that is not accy's, or an op with a result used by a
    live op of the block or inside the regions of one."""
    if isinstance(op, (func.ReturnOp, ops.YieldOp)) or not op.name.startswith("accy."):
        return True
    block = op.parent
    for result in op.results:
        for use in result.uses:
            user = block.find_ancestor_op_in_block(use.operation) if block else None
            if user is None or user in live:
                return True
    return False


def fusing_root(
    op: Operation,
    root_of: dict[Operation, Operation],
    dead: frozenset[Operation] | set[Operation] = frozenset(),
    contracted: frozenset[Operation] | set[Operation] = frozenset(),
) -> Operation | None:
    """The root of the group `op` joins, or None when `op` roots a group (see the module
    docstring). `root_of` maps every later live op of the block to its group's root; uses
    by `dead` ops do not count. Uses are counted by consumer op: `multiply %x, %x` is one
    consumer, which computes `%x` once. `contracted`: see `epilogue_root`."""
    if isinstance(op, CONTRACTIONS):
        return epilogue_root(op, root_of, dead, contracted)
    if is_operand_prologue(op):
        return root_of[next(iter(op.result.uses)).operation]
    if not isinstance(op, FUSIBLE) or len(op.results) != 1:
        return None
    consumers = {use.operation for use in op.results[0].uses} - set(dead)
    if not consumers or any(c.parent is not op.parent or not takes_producers(c) for c in consumers):
        return None
    if len(consumers) == 1:
        (consumer,) = consumers
        return root_of[consumer]
    roots = {root_of[c] for c in consumers}
    if len(roots) != 1:
        return None
    (root,) = roots
    if all(isinstance(c, POINTWISE) or c is root for c in consumers):
        return root
    return None


def _fuse_block(block: Block, meter: WorkMeter, dead: set[Operation]) -> list[FusionGroup]:
    """Groups of one block in order of their roots, each `accy.iterate` group followed
    by the groups of its body; adds the block's dead ops to `dead`. Walks backwards
    first, so that every consumer knows its root (and whether it is live) before its
    producers ask."""
    root_of: dict[Operation, Operation] = {}
    live: set[Operation] = set()
    contracted: set[Operation] = set()
    attention: dict[Operation, Operation] = {}  # a chain op → its attention group's root
    for op in reversed(block.ops):
        meter.visit()
        if not is_live(op, live):
            dead.add(op)
            meter.retain()
            continue
        live.add(op)
        if isinstance(op, DATA_OPS):
            continue
        root_of[op] = attention.get(op) or fusing_root(op, root_of, dead, contracted) or op
        if isinstance(op, ops.DotGeneralOp) and op not in attention:
            root = root_of[op]
            same_type = root.results[0].type.get_element_type() == op.result.type.get_element_type()  # type: ignore[attr-defined]
            for member in (attention_chain(op, dead, meter) or ()) if same_type else ():
                attention[member] = root
        if isinstance(op, CONTRACTIONS):
            contracted.add(root_of[op])
    members: dict[Operation, list[Operation]] = {}
    groups: list[FusionGroup] = []
    for op in block.ops:
        meter.visit()
        if op not in root_of:
            continue
        root = root_of[op]
        members.setdefault(root, []).append(op)
        if root is op:
            groups.append(FusionGroup(op, tuple(members.pop(op))))
            meter.retain(len(groups[-1].members))
            if isinstance(op, ops.LOOP_OPS):  # a while's cond, then its body
                for region in op.regions:
                    groups.extend(_fuse_block(region.block, meter, dead))
    return groups


def compute_fusion(_manager: AnalysisManager, root: Operation, meter: WorkMeter) -> FusionPlan:
    groups: list[FusionGroup] = []
    dead: set[Operation] = set()
    for function in root.walk():
        meter.visit()
        if isinstance(function, func.FuncOp):
            groups.extend(_fuse_block(function.body.block, meter, dead))
    group_of = {member: group for group in groups for member in group.members}
    return FusionPlan(tuple(groups), group_of, frozenset(dead))


def estimate_fusion(census: Census, _options: PlanOptions) -> WorkBounds:
    return WorkBounds(
        structural_visits=checked_add(
            census.operations,
            census.operations,
            census.operations,
            checked_mul(2 * ATTENTION_CHAIN_OPS, census.products),  # two sides per product
        ),
        retained_entries=census.operations,
    )


FUSION = AnalysisDescriptor(
    name="accy-fusion-plan",
    version=1,
    compute=compute_fusion,
    estimate=estimate_fusion,
)
