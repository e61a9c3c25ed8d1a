"""PQ-trees against brute force: a tree stands for exactly the orders that keep every reduced
subset consecutive. Leaves have their default bits (``1 << value``), so ``mask_of`` gives the
masks the functions take."""

from __future__ import annotations

import itertools
import math

import hypothesis.strategies as st
from accy.passes.arena.pq_tree import (
    Node,
    always_adjacent,
    contract,
    fixed_neighbours,
    freedom,
    frontier,
    leaf,
    mask_of,
    order_by,
    p_node,
    q_node,
    reduce,
    replace,
    replaced_freedom,
    shape,
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
        tree = reduce(tree, mask_of(subset))
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
    one = reduce(p_node([leaf(2), leaf(0), leaf(1), leaf(3)]), mask_of({0, 1}))
    two = reduce(p_node([leaf(3), leaf(1), leaf(0), leaf(2)]), mask_of({1, 0}))
    assert one == two and hash(one) == hash(two)
    assert q_node([leaf(2), leaf(1), leaf(0)]) == q_node([leaf(0), leaf(1), leaf(2)])


def test_replace_swaps_a_consecutive_subset_for_a_subtree() -> None:
    # Q[0 1 2 3] with {1, 2} replaced by P(7 8): 0 (7 8 in any order) 3, or reversed.
    tree = q_node([leaf(0), leaf(1), leaf(2), leaf(3)])
    replaced = replace(tree, mask_of({1, 2}), p_node([leaf(7), leaf(8)]))
    assert _orders(replaced) == {(0, 7, 8, 3), (0, 8, 7, 3), (3, 7, 8, 0), (3, 8, 7, 0)}


def test_replaced_freedom_without_making_the_tree() -> None:
    # Q[0 1 2 3 4] (2 orders) with {1, 2} by P(7 8 9) (3! orders): 2 * 6 = 12 orders; the
    # Q-node keeps its two orders with three children left. Then {0, 1} of Q[0 1 2] by one
    # leaf: two children left, P(n 2), still 2 orders.
    tree = q_node([leaf(i) for i in range(5)])
    assert math.isclose(replaced_freedom(tree, [(mask_of({1, 2}), 3)]), math.log(12))
    small = q_node([leaf(0), leaf(1), leaf(2)])
    assert math.isclose(replaced_freedom(small, [(mask_of({0, 1}), 1)]), math.log(2))


@settings(max_examples=200, deadline=None)
@given(reductions(), st.lists(st.sets(st.integers(0, 5), min_size=1), max_size=3))
def test_replaced_freedom_is_the_freedom_of_the_replaced_tree(case, groups) -> None:
    leaves, subsets = case
    tree: Node | None = p_node(map(leaf, range(leaves)))
    for subset in subsets:
        assert tree is not None
        narrowed = reduce(tree, mask_of(subset))
        tree = tree if narrowed is None else narrowed
    parts, taken, fresh = [], set(), 100
    for group in groups:  # disjoint groups the tree can make consecutive, one after another
        group = frozenset(group & set(range(leaves))) - taken
        narrowed = reduce(tree, mask_of(group)) if group else None
        if narrowed is None:
            continue
        tree, count = narrowed, len(parts) + 1
        parts.append((mask_of(group), count))
        taken |= group
    assert tree is not None
    made = tree
    for group, count in parts:
        made = replace(made, group, p_node(leaf(fresh + i) for i in range(count)))
        fresh += count
    assert math.isclose(replaced_freedom(tree, parts), freedom(made), abs_tol=1e-9)


@settings(max_examples=200, deadline=None)
@given(reductions(), st.sets(st.integers(0, 5), min_size=1))
def test_contract_keeps_which_subsets_of_the_kept_leaves_can_be_consecutive(case, keep) -> None:
    leaves, subsets = case
    tree: Node | None = p_node(map(leaf, range(leaves)))
    for subset in subsets:  # a tree shaped by earlier reductions
        assert tree is not None
        narrowed = reduce(tree, mask_of(subset))
        tree = tree if narrowed is None else narrowed
    assert tree is not None
    kept = mask_of(keep & set(range(leaves)))
    small = contract(tree, kept)
    assert shape(small, kept) == shape(tree, kept)
    # Every subtree without kept leaves is one leaf now, with the bit of its smallest leaf.
    assert all(node.mask & kept for node in _subtrees(small) if node.children)
    assert all(node.mask == 1 << node.smallest for node in _subtrees(small) if not node.children)
    for size in range(2, len(keep & set(range(leaves))) + 1):
        for chosen in itertools.combinations(sorted(keep & set(range(leaves))), size):
            subset = mask_of(chosen)
            whole, part = reduce(tree, subset), reduce(small, subset)
            assert (whole is None) == (part is None)
            if whole is not None and part is not None:
                assert contract(whole, kept) == contract(part, kept)
                assert math.isclose(
                    freedom(whole) - freedom(part), freedom(tree) - freedom(small), abs_tol=1e-9
                )


def _subtrees(tree: Node) -> list[Node]:
    return [tree, *(node for child in tree.children for node in _subtrees(child))]


def test_shape_names_kept_leaves_and_not_blockers() -> None:
    # Q[0 P(1 2) 3 4] kept {0, 4}: the P-node and 3 are blockers, "x"; a tree with other
    # blocker leaves (5 and 6 for 1, 2 and 3) has the same shape, reversing a Q-node too.
    kept = mask_of({0, 4})
    tree = q_node([leaf(0), p_node([leaf(1), leaf(2)]), leaf(3), leaf(4)])
    other = q_node([leaf(4), leaf(6), p_node([leaf(5), leaf(7)]), leaf(0)])
    assert shape(tree, kept) == shape(other, kept) == "Q[0 x x 4]"
    assert contract(tree, kept) == q_node([leaf(0), leaf(1), leaf(3), leaf(4)])
    assert shape(tree, mask_of({0, 1})) != shape(other, mask_of({0, 5}))


@settings(max_examples=300, deadline=None)
@given(reductions(), st.sets(st.integers(0, 5), min_size=1))
def test_fixed_neighbours_are_next_to_a_consecutive_set_in_every_order(case, group) -> None:
    leaves, subsets = case
    tree: Node | None = p_node(map(leaf, range(leaves)))
    for subset in [*subsets, group & set(range(leaves))]:  # the last one made consecutive
        assert tree is not None
        narrowed = reduce(tree, mask_of(subset)) if subset else None
        tree = tree if narrowed is None else narrowed
    assert tree is not None
    made = frozenset(group & set(range(leaves)))
    if not made or reduce(tree, mask_of(made)) != tree:
        return  # not consecutive in every order
    orders = _orders(tree)
    expected = {
        value
        for value in set(range(leaves)) - made
        if all(_consecutive(order, made | {value}) for order in orders)
    }
    assert fixed_neighbours(tree, mask_of(made)) == mask_of(expected)


@settings(max_examples=300, deadline=None)
@given(reductions(), st.sets(st.integers(0, 5), min_size=1), st.sets(st.integers(0, 5)))
def test_always_adjacent_is_the_union_consecutive_in_every_order(case, first, second) -> None:
    leaves, subsets = case
    first, second = first & set(range(leaves)), (second - first) & set(range(leaves))
    tree: Node | None = p_node(map(leaf, range(leaves)))
    for subset in [*subsets, first, second]:  # the last two made consecutive where they can
        narrowed = reduce(tree, mask_of(subset)) if subset else None
        tree = tree if narrowed is None else narrowed
    one, other = mask_of(first), mask_of(second)
    if not first or not second or reduce(tree, one) != tree or reduce(tree, other) != tree:
        return  # not each consecutive in every order
    expected = all(_consecutive(order, first | second) for order in _orders(tree))
    assert always_adjacent(tree, one, other) == expected
    assert (reduce(tree, one | other) == tree) == expected


def test_leaves_are_told_apart_by_value_and_bit() -> None:
    # Bits need only differ within a tree (the sweep reuses them over time): a leaf is its
    # value and its bit, and masks wider than a machine word work the same.
    assert leaf(3, 1) != leaf(5, 1) and leaf(3, 1) != leaf(3, 2) and leaf(3) == leaf(3, 8)
    wide = p_node([leaf(70), leaf(71), leaf(72)])
    narrowed = reduce(wide, mask_of({70, 72}))
    assert narrowed is not None and _orders(narrowed) == {
        order for order in _orders(wide) if _consecutive(order, {70, 72})
    }
