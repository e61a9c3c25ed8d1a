"""PQ-trees (Booth and Lueker, 1976): the orders of a set of leaves that keep chosen subsets
consecutive.

A tree stands for a set of leaf orders, its *frontiers*: a P-node's children may come in any
order, a Q-node's children in their order or reversed, and each child's leaves stay together.
``reduce(tree, subset)`` keeps exactly the orders in which ``subset`` is consecutive (or says
there are none), ``replace`` swaps a consecutive subset for a new subtree, ``order_by`` finds
an order that follows given ranks, and ``freedom`` measures how many orders are left.

Sets of leaves are bit masks: each leaf has a bit (``1 << value`` unless given), a node's
``mask`` is its leaves' bits, and the functions here take and give sets of leaves as masks
(``mask_of``). Bits need only differ within a tree: the ``sweep`` gives buffers that are never
in one tree the same bit, so that its masks stay within a machine word (compiled, an ``int``
of up to 62 bits is not an object, and a set operation allocates nothing).

Invariants (kept by the constructors ``leaf``, ``p_node`` and ``q_node``): a P-node has at
least two children and a Q-node at least three (a two-child Q-node is a P-node); nodes are
canonical, a P-node's children sorted by their smallest leaf value and a Q-node read from the
end with the smaller smallest leaf, so two trees standing for the same orders are equal and
hash alike (the ``sweep`` search remembers trees that failed); the leaves of a tree have
distinct bits.

Reduction follows the classic templates, written as one bottom-up pass: below the *pertinent
root* (the lowest node holding every leaf of the subset) each node is *empty*, *full* or
*partial*; a partial node becomes a sequence of children read from its empty side to its full
side and is spliced into its parent, which must then be a Q-node. A node that cannot be made
to read that way (two partial children below the root, full children not at one end of a
Q-node, ...) means no order keeps the subset consecutive.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

# Final: compiled, a constant, not a lookup in the module's globals
_LEAF: Final = 0
_P: Final = 1
_Q: Final = 2
_EMPTY: Final = 0
_FULL: Final = 1
_PARTIAL: Final = 2
# Hashes are kept below 2**29: compiled, a product of two integers below 2**30 is worked out
# in machine integers (larger ones take the arbitrary-precision path, a thousand instructions)
_HASH_BITS: Final = (1 << 29) - 1


class Node:
    """A PQ-tree node: a leaf (``kind == 0``), a P-node (1) or a Q-node (2); ``mask`` holds
    its leaves' bits, ``smallest`` its smallest leaf value and ``low`` that leaf's bit."""

    __slots__ = ("_freedom", "_hash", "children", "kind", "low", "mask", "smallest")
    kind: int
    children: tuple[Node, ...]
    mask: int
    smallest: int
    low: int
    _hash: int
    _freedom: float | None

    def __init__(
        self, kind: int, children: tuple[Node, ...], mask: int, smallest: int, low: int
    ) -> None:
        self.kind = kind
        self.children = children
        self.mask = mask
        self.smallest = smallest
        self.low = low
        digest = (kind * 1_000_003 + smallest) & _HASH_BITS
        for child in children:
            digest = (digest * 1_000_003 ^ child._hash) & _HASH_BITS
        self._hash = digest
        self._freedom = None  # worked out when first asked

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Node) or self._hash != other._hash:
            return False
        return (
            self.kind == other.kind
            and self.smallest == other.smallest
            and self.mask == other.mask
            and self.children == other.children
        )

    def __repr__(self) -> str:
        if self.kind == _LEAF:
            return str(self.smallest)
        inner = " ".join(map(repr, self.children))
        return f"P({inner})" if self.kind == _P else f"Q[{inner}]"


def leaf(value: int, bit: int = 0) -> Node:
    """The one-leaf tree of ``value``, with the bit ``bit`` (by default ``1 << value``)."""
    own = bit or 1 << value
    return Node(_LEAF, (), own, value, own)


def mask_of(values: Iterable[int]) -> int:
    """The mask of the leaves ``values`` with their default bits (see ``leaf``)."""
    mask = 0
    for value in values:
        mask |= 1 << value
    return mask


def _smallest_child(children: tuple[Node, ...]) -> Node:
    """The child with the smallest leaf."""
    best = children[0]
    for child in children:
        if child.smallest < best.smallest:
            best = child
    return best


def _union(children: tuple[Node, ...]) -> int:
    """The mask of the leaves of ``children``."""
    mask = 0
    for child in children:
        mask |= child.mask
    return mask


def p_node(children: Iterable[Node]) -> Node:
    """Children in any order (a single child stands for itself)."""
    ordered = tuple(_by_smallest(children))
    if len(ordered) == 1:
        return ordered[0]
    first = ordered[0]
    return Node(_P, ordered, _union(ordered), first.smallest, first.low)


def _by_smallest(children: Iterable[Node]) -> list[Node]:
    """``children`` by their smallest leaves: an insertion sort, as a node has few children
    (compiled, it compares machine integers where ``sorted`` calls a key per child)."""
    ordered: list[Node] = []
    for child in children:
        i = len(ordered)
        ordered.append(child)
        while i > 0 and ordered[i - 1].smallest > child.smallest:
            ordered[i] = ordered[i - 1]
            i -= 1
        ordered[i] = child
    return ordered


def q_node(children: Sequence[Node]) -> Node:
    """Children in this order or reversed (one or two children need no Q-node)."""
    if len(children) <= 2:
        return p_node(children)
    sequence = tuple(children)
    if sequence[0].smallest > sequence[-1].smallest:
        sequence = sequence[::-1]
    least = _smallest_child(sequence)
    return Node(_Q, sequence, _union(sequence), least.smallest, least.low)


def frontier(tree: Node) -> list[int]:
    """One order the tree stands for: its leaves left to right."""
    if tree.kind == _LEAF:
        return [tree.smallest]
    return [value for child in tree.children for value in frontier(child)]


def freedom(tree: Node) -> float:
    """The natural log of the number of orders the tree stands for."""
    if tree._freedom is None:
        if tree.kind == _LEAF:
            tree._freedom = 0.0
        else:
            own = math.lgamma(len(tree.children) + 1) if tree.kind == _P else math.log(2)
            tree._freedom = own + sum(freedom(child) for child in tree.children)
    return tree._freedom


def replaced_freedom(tree: Node, parts: Iterable[tuple[int, int]]) -> float:
    """The ``freedom`` of ``tree`` with each set of leaves of ``parts`` (a mask) replaced by a
    P-node of as many new leaves as given (as ``replace`` does), without making that tree.

    Each set must be consecutive in every order (``tree`` ``reduce``-d by it) and the sets
    disjoint: a set is then the leaves of one node, or of a run of a Q-node's children, whose
    freedom the P-node's takes the place of (the Q-node keeps its two orders, even when left
    with two children, a P-node of two).
    """
    total = freedom(tree)
    for leaves, count in parts:
        total += math.lgamma(count + 1) - _part_freedom(tree, leaves)
    return total


def _part_freedom(tree: Node, leaves: int) -> float:
    """The freedom of the node holding exactly ``leaves``, or of the run of a Q-node's
    children that does."""
    _, node, run = _holder(tree, leaves)
    if run is None:
        return freedom(node)
    return sum(freedom(node.children[i]) for i in run)


def fixed_neighbours(tree: Node, leaves: int) -> int:
    """The leaves (a mask) that every order of ``tree`` puts right next to ``leaves``, which
    must be consecutive in every order (``tree`` ``reduce``-d by them).

    Such a set is the leaves of one node, or of a run of a Q-node's children: a neighbour is
    fixed only where a leaf is the next child of that Q-node (or the other child of a two-child
    P-node, a Q-node of two); any other neighbour varies with the orders of the subtrees and
    nodes around.
    """
    parent, node, run = _holder(tree, leaves)
    if run is not None:
        return _leaf_bits(node.children, run[0] - 1, run[-1] + 1)
    if parent is None or not (parent.kind == _Q or len(parent.children) == 2):
        return 0
    index = parent.children.index(node)
    return _leaf_bits(parent.children, index - 1, index + 1)


def always_adjacent(tree: Node, first: int, second: int) -> bool:
    """Whether every order of ``tree`` puts the disjoint sets ``first`` and ``second`` next to
    each other (their union consecutive: ``reduce`` by it leaves ``tree`` as it is); each
    must be consecutive in every order.

    Any subtree can be read reversed on its own, so a set inside a child is next to a set
    outside that child in every order only when it is all of the child: the two sets are
    neighbouring runs of one Q-node's children, or the two children of a P-node of two.
    """
    holder, run = _run(tree, first)
    other, other_run = _run(tree, second)
    if holder is None or holder is not other:
        return False
    if holder.kind == _P:
        return len(holder.children) == 2
    return run[-1] + 1 == other_run[0] or other_run[-1] + 1 == run[0]


def _run(tree: Node, leaves: int) -> tuple[Node | None, list[int]]:
    """The node of which ``leaves`` (consecutive in every order) are a run of children, and
    the run's indices; ``(None, [])`` when they are all of ``tree``."""
    parent, node, run = _holder(tree, leaves)
    if run is not None:
        return node, run
    if parent is None:
        return None, []
    return parent, [parent.children.index(node)]


def _holder(tree: Node, leaves: int) -> tuple[Node | None, Node, list[int] | None]:
    """Where ``leaves`` (consecutive in every order of ``tree``) are: ``(parent, node, None)``
    for the node holding exactly them, or ``(None, node, run)`` for the run of a Q-node's
    children (their indices) that does."""
    parent: Node | None = None
    node = tree
    while node.mask != leaves:
        inner = _child_holding(node, leaves)
        if inner is None:  # a run of the Q-node's children
            run = [i for i, child in enumerate(node.children) if not child.mask & ~leaves]
            return None, node, run
        parent, node = node, inner
    return parent, node, None


def _child_holding(node: Node, leaves: int) -> Node | None:
    """The child of ``node`` holding every leaf of ``leaves``, if one does."""
    for child in node.children:
        if not leaves & ~child.mask:
            return child
    return None


def _leaf_bits(children: tuple[Node, ...], before: int, after: int) -> int:
    """The bits of the leaves among ``children`` at ``before`` and ``after`` (those in
    range)."""
    bits = 0
    for i in (before, after):
        if 0 <= i < len(children) and children[i].kind == _LEAF:
            bits |= children[i].mask
    return bits


def contract(tree: Node, keep: int) -> Node:
    """``tree`` with every subtree holding no leaf of ``keep`` made one leaf, named by the
    subtree's smallest leaf, with its bit (a *blocker*).

    A subtree's leaves are consecutive in every order, so a set of ``keep`` leaves can be made
    consecutive in the contracted tree exactly when it can in ``tree``, and reducing either by
    such a set gives trees that contract alike; the contracted tree is often far smaller, and
    its ``freedom`` differs from the tree's by the blockers' own, before and after. Smallest
    leaves are unchanged, so the canonical order of children is too.
    """
    if tree.kind == _LEAF:
        return tree
    if not tree.mask & keep:
        return leaf(tree.smallest, tree.low)
    if not tree.mask & ~keep:
        return tree
    children = tuple(contract(child, keep) for child in tree.children)
    return Node(tree.kind, children, _union(children), tree.smallest, tree.low)


def shape(tree: Node, keep: int) -> str:
    """A text naming the leaves of ``keep`` and the structure around them, the same for two
    trees exactly when their ``contract``-ions differ only in the names of blockers."""
    if not tree.mask & keep:
        return "x"
    if tree.kind == _LEAF:
        return str(tree.smallest)
    parts = [shape(child, keep) for child in tree.children]
    if tree.kind == _P:
        return "P(" + " ".join(sorted(parts)) + ")"
    forward, backward = " ".join(parts), " ".join(reversed(parts))
    return "Q[" + min(forward, backward) + "]"


class _Impossible(Exception):
    """No order of the tree keeps the subset consecutive."""


def _by_label(results: list[tuple[int, Node | list[Node]]]) -> tuple[list, list, list]:
    """The empty children, the full ones and the partial sequences, each in order."""
    groups: tuple[list, list, list] = ([], [], [])
    for label, value in results:
        groups[label].append(value)
    return groups


def _reads_empty_to_full(labels: list[int]) -> bool:
    """Whether a Q-node's children labels read empty ones, at most one partial, full ones."""
    i = 0
    while i < len(labels) and labels[i] == _EMPTY:
        i += 1
    if i < len(labels) and labels[i] == _PARTIAL:
        i += 1
    while i < len(labels) and labels[i] == _FULL:
        i += 1
    return i == len(labels)


def _root_allows(kind: int, labels: list[int]) -> bool:
    """Whether a pertinent root of ``kind`` with these children labels can be reduced: a
    P-node with at most two partial children, a Q-node whose non-empty children are
    neighbours, partial ones only at the two ends."""
    if kind == _P:
        return labels.count(_PARTIAL) <= 2
    touched = [i for i, label in enumerate(labels) if label != _EMPTY]
    low, high = touched[0], touched[-1]
    return all(
        labels[i] != _EMPTY and (labels[i] != _PARTIAL or i in (low, high))
        for i in range(low, high + 1)
    )


def _label(node: Node, subset: int) -> int:
    """Below the pertinent root: the label ``_sorted_out`` gives ``node``, without building
    anything; raises ``_Impossible`` where it does."""
    leaves = node.mask
    if not leaves & subset:
        return _EMPTY
    if not leaves & ~subset:
        return _FULL
    if node.kind == _P:
        if _partial_children(node, subset) > 1:
            raise _Impossible
        return _PARTIAL
    labels = [_label(child, subset) for child in node.children]
    if _reads_empty_to_full(labels) or _reads_empty_to_full(labels[::-1]):
        return _PARTIAL
    raise _Impossible


def _partial_children(node: Node, subset: int) -> int:
    """How many children of the P-node ``node`` ``_label`` calls partial (all that a P-node's
    checks look at; a leaf is never partial, so leaves are skipped)."""
    return sum(
        1 for child in node.children if child.kind != _LEAF and _label(child, subset) == _PARTIAL
    )


def _possible(tree: Node, subset: int) -> bool:
    """Whether some order of ``tree`` keeps ``subset`` consecutive: the checks of ``reduce``
    on labels alone (most subsets the ``sweep`` tries are refused, so this runs first)."""
    node = tree
    while (inner := _child_holding(node, subset)) is not None:  # the pertinent root below
        node = inner
    if subset == node.mask:
        return True
    try:
        if node.kind == _P:
            return _partial_children(node, subset) <= 2
        labels = [_label(child, subset) for child in node.children]
    except _Impossible:
        return False
    return _root_allows(node.kind, labels)


def _sorted_out(node: Node, subset: int) -> tuple[int, Node | list[Node]]:
    """Below the pertinent root: ``(EMPTY, node)``, ``(FULL, node)`` or ``(PARTIAL, sequence)``
    with the sequence read from the empty side to the full side."""
    if not node.mask & subset:
        return _EMPTY, node
    if not node.mask & ~subset:
        return _FULL, node
    results = [_sorted_out(child, subset) for child in node.children]
    if node.kind == _P:
        empty, full, partial = _by_label(results)
        if len(partial) > 1:
            raise _Impossible
        sequence: list[Node] = [p_node(empty)] if empty else []
        if partial:
            sequence.extend(partial[0])  # type: ignore[arg-type]
        if full:
            sequence.append(p_node(full))
        return _PARTIAL, sequence
    for candidate in (results, results[::-1]):  # a Q-node reads E* [partial] F* either way
        if _reads_empty_to_full([label for label, _ in candidate]):
            return _PARTIAL, _spliced(candidate)
    raise _Impossible


def _spliced(results: list[tuple[int, Node | list[Node]]], reversed_at: int = -1) -> list[Node]:
    """Children in order with the partial ones spliced in, the one at ``reversed_at`` (if
    partial) read backwards, from its full side to its empty side."""
    sequence: list[Node] = []
    for i, (label, value) in enumerate(results):
        if label == _PARTIAL:
            parts = list(value)  # type: ignore[arg-type]
            sequence.extend(parts[::-1] if i == reversed_at else parts)
        else:
            sequence.append(value)  # type: ignore[arg-type]
    return sequence


def _reduced_root(node: Node, subset: int) -> Node:
    """The pertinent root after the reduction (its subset leaves in two or more children)."""
    results = [_sorted_out(child, subset) for child in node.children]
    if not _root_allows(node.kind, [label for label, _ in results]):
        raise _Impossible
    if node.kind == _P:
        empty, full, partial = _by_label(results)
        if partial:  # empty..full [full children] full..empty
            sequence = list(partial[0])  # type: ignore[arg-type]
            if full:
                sequence.append(p_node(full))
            if len(partial) == 2:
                sequence.extend(reversed(partial[1]))  # type: ignore[arg-type]
            inner = q_node(sequence)
        else:
            inner = p_node(full)
        return p_node([*empty, inner]) if empty else inner
    high = max(i for i, (label, _) in enumerate(results) if label != _EMPTY)
    # A partial child at the low end reads empty..full, one at the high end full..empty.
    return q_node(_spliced(results, reversed_at=high))


def reduce(tree: Node, subset: int, checked: bool = False) -> Node | None:
    """The tree of the orders of ``tree`` in which the leaves of the mask ``subset`` are
    consecutive; ``None`` when there is none. ``subset`` must be leaves of ``tree``;
    ``checked`` skips the check of the labels alone (most subsets the ``sweep`` tries are
    refused by it), for a subset known to be consecutive in some order."""
    if not subset & (subset - 1):  # one leaf, or none
        return tree
    if not checked and not _possible(tree, subset):
        return None
    try:
        return _reduced(tree, subset)
    except _Impossible:
        return None


def _reduced(node: Node, subset: int) -> Node:
    for i, child in enumerate(node.children):
        if not subset & ~child.mask:  # the pertinent root lies below
            children = list(node.children)
            children[i] = _reduced(child, subset)
            return p_node(children) if node.kind == _P else q_node(children)
    if subset == node.mask:
        return node
    return _reduced_root(node, subset)


def replace(tree: Node, subset: int, new: Node) -> Node:
    """``tree`` with the leaves of the mask ``subset`` (consecutive in every order of ``tree``,
    as after ``reduce``) taken out and ``new`` standing where they were."""
    if tree.mask == subset:
        return new
    for i, child in enumerate(tree.children):
        if not subset & ~child.mask:
            children = list(tree.children)
            children[i] = replace(child, subset, new)
            return p_node(children) if tree.kind == _P else q_node(children)
    inside = [i for i, child in enumerate(tree.children) if child.mask & subset]
    if any(tree.children[i].mask & ~subset for i in inside) or (
        tree.kind == _Q and inside != list(range(inside[0], inside[-1] + 1))
    ):
        raise ValueError(f"leaves {subset:#b} are not consecutive in {tree!r}")
    if tree.kind == _P:
        return p_node([child for i, child in enumerate(tree.children) if i not in inside] + [new])
    siblings = tree.children
    return q_node([*siblings[: inside[0]], new, *siblings[inside[-1] + 1 :]])


def order_by(tree: Node, rank: Mapping[int, int]) -> list[int] | None:
    """An order of ``tree`` whose ranks never decrease, or ``None`` when it has none.

    Leaves of equal rank may come in any order the tree allows.
    """
    if tree.kind == _LEAF:
        return [tree.smallest]
    parts = []
    for child in tree.children:
        part = order_by(child, rank)
        if part is None:
            return None
        parts.append(part)
    if tree.kind == _P:
        parts.sort(key=lambda part: (rank[part[0]], rank[part[-1]]))
        candidates = [parts]
    else:
        candidates = [parts, parts[::-1]]
    for candidate in candidates:
        order = [value for part in candidate for value in part]
        if all(rank[a] <= rank[b] for a, b in itertools.pairwise(order)):
            return order
    return None
