"""PQ-trees against brute force: a tree stands for exactly the orders that keep every reduced
subset consecutive."""

from __future__ import annotations

import itertools
import math

import hypothesis.strategies as st
from accy.passes.arena.pq_tree import (
    Node,
    freedom,
    frontier,
    leaf,
    order_by,
    p_node,
    q_node,
    reduce,
    replace,
)
from hypothesis import given, settings


def _orders(tree: Node) -> set[tuple[int, ...]]:
    """Every order ``tree`` stands for, by expanding it."""
    if not tree.children:
        return {(tree.smallest,)}
    child_orders = [_orders(child) for child in tree.children]
    count = len(tree.children)
    if tree.kind == 1:  # P-node
        arrangements = list(itertools.permutations(range(count)))
    else:
        arrangements = [tuple(range(count)), tuple(reversed(range(count)))]
    found = set()
    for arrangement in arrangements:
        for parts in itertools.product(*(child_orders[i] for i in arrangement)):
            found.add(tuple(value for part in parts for value in part))
    return found


def _consecutive(order: tuple[int, ...], subset: set[int]) -> bool:
    places = sorted(order.index(value) for value in subset)
    return places[-1] - places[0] == len(subset) - 1


@st.composite
def reductions(draw) -> tuple[int, list[set[int]]]:
    leaves = draw(st.integers(2, 6))
    subsets = draw(
        st.lists(st.sets(st.integers(0, leaves - 1), min_size=2, max_size=leaves), max_size=5)
    )
    return leaves, subsets


@settings(max_examples=300, deadline=None)
@given(reductions())
def test_reduce_keeps_exactly_the_orders_with_the_subset_consecutive(case) -> None:
    leaves, subsets = case
    tree: Node | None = p_node(map(leaf, range(leaves)))
    allowed = set(itertools.permutations(range(leaves)))
    for subset in subsets:
        allowed = {order for order in allowed if _consecutive(order, subset)}
        assert tree is not None
        tree = reduce(tree, subset)
        if tree is None:
            assert not allowed
            return
        assert _orders(tree) == allowed
        assert math.isclose(freedom(tree), math.log(len(allowed)))
        assert tuple(frontier(tree)) in allowed
        # order_by recovers any allowed order from its ranks
        for order in sorted(allowed)[:5]:
            assert order_by(tree, {value: i for i, value in enumerate(order)}) == list(order)


def test_order_by_refuses_ranks_no_order_follows() -> None:
    tree = q_node([leaf(0), leaf(1), leaf(2)])  # 0 1 2 or 2 1 0
    assert order_by(tree, {0: 0, 1: 2, 2: 1}) is None
    assert order_by(tree, {0: 2, 1: 1, 2: 0}) == [2, 1, 0]


def test_equal_order_sets_give_equal_trees() -> None:
    # Canonical forms: the same orders, built in different ways, compare and hash equal.
    one = reduce(p_node([leaf(2), leaf(0), leaf(1), leaf(3)]), {0, 1})
    two = reduce(p_node([leaf(3), leaf(1), leaf(0), leaf(2)]), {1, 0})
    assert one == two and hash(one) == hash(two)
    assert q_node([leaf(2), leaf(1), leaf(0)]) == q_node([leaf(0), leaf(1), leaf(2)])


def test_replace_swaps_a_consecutive_subset_for_a_subtree() -> None:
    # Q[0 1 2 3] with {1, 2} replaced by P(7 8): 0 (7 8 in any order) 3, or reversed.
    tree = q_node([leaf(0), leaf(1), leaf(2), leaf(3)])
    replaced = replace(tree, {1, 2}, p_node([leaf(7), leaf(8)]))
    assert _orders(replaced) == {(0, 7, 8, 3), (0, 8, 7, 3), (3, 7, 8, 0), (3, 8, 7, 0)}
