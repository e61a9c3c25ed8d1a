"""Reduce a failing program to a small one that fails the same way.

`shrink(program, arguments, failing)` keeps a `(program, arguments)` pair and tries, in
rounds, smaller variants of it - fewer results; a node's results replaced by new
parameters that receive the values the reference computed for them (so what follows runs
on the same numbers) or by one of its operands of the same type; a loop replaced by its
initial values, its trip count cut, a node of its body bypassed; constants made splats of
0 or 1; a size of the parameters' shapes made 1 or halved - each with dead nodes and unused
parameters dropped (`compact`). `failing(candidates)` says, for a batch of candidates,
which still fail the same way (the command runs them in watchdog workers and compares
`check.signature`); the first that does becomes the program, until a round finds nothing
or `rounds` run out. Candidates are tried smallest first (`Program.size`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import numpy as np

import accy

from . import spec, values
from .spec import Node, Program, Tensor

Candidate = tuple[Program, list[np.ndarray]]


def compact(program: Program, arguments: Sequence[np.ndarray], substitute: dict[int, int],
            new_params: Sequence[Tensor] = (), new_arguments: Sequence[np.ndarray] = ()
            ) -> Candidate:  # fmt: skip
    """`program` with each use of value `v` (operands and results) replaced by
    `substitute[v]` (a value, or `-1 - k` for new parameter `k` of `new_params`), then
    with the nodes nothing needs and the parameters nothing reads dropped, renumbered."""
    old_params = len(program.params)
    params = [*program.params, *new_params]
    args = [*arguments, *new_arguments]

    def value(v: int) -> tuple[str, int]:
        v = substitute.get(v, v)
        return ("p", old_params - 1 - v) if v < 0 else ("v", v)

    results = [value(r) for r in program.results]
    live: set[tuple[str, int]] = set(results)
    keep = [False] * len(program.nodes)
    starts = []
    at = len(program.params)
    for n in program.nodes:
        starts.append(at)
        at += n.count
    for index in range(len(program.nodes) - 1, -1, -1):
        n = program.nodes[index]
        if any(("v", starts[index] + k) in live for k in range(n.count)):
            keep[index] = True
            live.update(value(a) for a in n.args)
    number: dict[tuple[str, int], int] = {}
    kept_params = []
    for i in range(len(params)):
        key = ("v", i) if i < old_params else ("p", i)
        if key in live:
            number[key] = len(kept_params)
            kept_params.append(i)
    nodes = []
    count = len(kept_params)
    for index, n in enumerate(program.nodes):
        if not keep[index]:
            continue
        nodes.append(replace(n, args=tuple(number[value(a)] for a in n.args)))
        for k in range(n.count):
            number[("v", starts[index] + k)] = count
            count += 1
    donated = tuple(number[("v", d)] for d in program.donated if ("v", d) in number)
    shrunk = Program(
        params=tuple(params[i] for i in kept_params),
        nodes=tuple(nodes),
        results=tuple(number[r] for r in results),
        donated=donated,
        threads=program.threads,
    )
    return shrunk, [args[i] for i in kept_params]


def all_values(program: Program, arguments: Sequence[np.ndarray]) -> dict[int, np.ndarray]:
    """Every node result's value, from the reference (empty where it fails)."""
    first = len(program.params)
    every = replace(program, results=tuple(range(first, program.value_count())))
    try:
        return dict(zip(every.results, accy.reference.run(spec.build(every), "f", *arguments)))
    except Exception:  # noqa: BLE001 - then the new parameters get random values
        return {}


# ---------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------


def fewer_results(program: Program, arguments) -> Iterator[Candidate]:
    if len(program.results) > 1:
        for r in dict.fromkeys(program.results):
            yield compact(replace(program, results=(r,)), arguments, {})
        for k in range(len(program.results)):
            rest = program.results[:k] + program.results[k + 1 :]
            yield compact(replace(program, results=rest), arguments, {})


def cut_nodes(program: Program, arguments, computed: dict[int, np.ndarray]) -> Iterator[Candidate]:
    """Each node's results replaced by new parameters holding the values they had."""
    types = spec.value_types(program)
    rng = np.random.default_rng(0)
    at = len(program.params)
    for n in program.nodes:
        made = range(at, at + n.count)
        at += n.count
        if n.op == "constant" and not n.args:
            continue
        new = [types[v] for v in made]
        fresh = [computed[v] if v in computed else values.array(rng, t, "normal")
                 for v, t in zip(made, new)]  # fmt: skip
        yield compact(program, arguments, {v: -1 - k for k, v in enumerate(made)}, new, fresh)


def bypass_nodes(program: Program, arguments) -> Iterator[Candidate]:
    """Each single-result node replaced by one of its operands of its type."""
    types = spec.value_types(program)
    at = len(program.params)
    for n in program.nodes:
        if n.count == 1:
            for a in dict.fromkeys(n.args):
                if types[a] == types[at]:
                    yield compact(program, arguments, {at: a})
        at += n.count


def simpler_loops(program: Program, arguments) -> Iterator[Candidate]:
    """A loop replaced by its initial values; its trips cut; a body node bypassed."""
    at = len(program.params)
    for index, n in enumerate(program.nodes):
        body = n.attr("body")
        if isinstance(body, Program):
            inits = n.attr("inits")
            yield compact(program, arguments, {at + k: n.args[k] for k in range(inits)})
            for name in ("trips", "limit"):
                if (trips := n.attr(name)) is not None and trips > 1:
                    yield _with_node(program, arguments, index, n.with_attrs(**{name: 1}))
            for smaller in _smaller_bodies(body):
                yield _with_node(program, arguments, index, n.with_attrs(body=smaller))
        at += n.count


def _smaller_bodies(body: Program) -> Iterator[Program]:
    """The body with one node's result replaced by a parameter of its type (its
    parameters stay: the loop binds them)."""
    types = spec.value_types(body)
    at = len(body.params)
    for n in body.nodes:
        if n.count == 1:
            for p in range(len(body.params)):
                if types[p] == types[at]:
                    smaller, _ = compact(body, [np.zeros(0)] * len(body.params), {at: p})
                    if len(smaller.params) == len(body.params):
                        yield smaller
                    break
        at += n.count


def _with_node(program: Program, arguments, index: int, n: Node) -> Candidate:
    nodes = program.nodes[:index] + (n,) + program.nodes[index + 1 :]
    return replace(program, nodes=nodes), list(arguments)


def simpler_constants(program: Program, arguments) -> Iterator[Candidate]:
    for index, n in enumerate(program.nodes):
        if n.op == "constant":
            current = n.attr("values")
            for value in (current[0], 0, 1):
                if (value,) != current:
                    yield _with_node(program, arguments, index, n.with_attrs(values=(value,)))


def smaller_shapes(program: Program, arguments) -> Iterator[Candidate]:
    """A size of the parameters made 1 or halved wherever it appears in their shapes
    and in shape attributes; the arguments cut to match."""
    sizes = sorted({d for p in program.params for d in p.shape if d > 1}, reverse=True)
    for size in sizes:
        for smaller in dict.fromkeys((1, size // 2)):
            params = tuple(
                replace(p, shape=tuple(smaller if d == size else d for d in p.shape))
                for p in program.params
            )
            nodes = tuple(
                n.with_attrs(shape=tuple(smaller if d == size else d for d in n.attr("shape")))
                if n.attr("shape") is not None
                else n
                for n in program.nodes
            )
            cut = [
                a[tuple(slice(0, smaller) if d == size else slice(None) for d in a.shape)]
                for a in arguments
            ]
            yield (
                replace(program, params=params, nodes=nodes),
                [np.ascontiguousarray(a) for a in cut],
            )


def candidates(program: Program, arguments) -> list[Candidate]:
    """Every variant of this round that builds and is smaller, smallest first."""
    computed = all_values(program, arguments)
    made = []
    for source in (
        fewer_results(program, arguments),
        cut_nodes(program, arguments, computed),
        bypass_nodes(program, arguments),
        simpler_loops(program, arguments),
        simpler_constants(program, arguments),
        smaller_shapes(program, arguments),
    ):
        made.extend(_each(source))
    seen, kept = set(), []
    size = program.size()
    for shrunk, args in made:
        if shrunk in seen or not _smaller(shrunk, program, size):
            continue
        seen.add(shrunk)
        if _builds(shrunk):
            kept.append((shrunk, args))
    kept.sort(key=lambda c: c[0].size())
    return kept


def _each(source: Iterator[Candidate]) -> list[Candidate]:
    """What `source` yields until it ends or raises (a variant the Builder refuses
    ends that kind of variant for the round)."""
    made = []
    try:
        made.extend(source)
    except Exception:  # noqa: BLE001
        return made
    return made


def _builds(program: Program) -> bool:
    try:
        spec.build(program)
    except Exception:  # noqa: BLE001 - does not verify
        return False
    return True


def _smaller(shrunk: Program, program: Program, size: int) -> bool:
    """Fewer nodes or parameter elements, or the same with simpler constants or loops."""
    if shrunk.size() != size:
        return shrunk.size() < size
    return shrunk != program


def shrink(
    program: Program,
    arguments: Sequence[np.ndarray],
    failing: Callable[[list[Candidate]], list[bool]],
    *,
    rounds: int = 60,
    batch: int = 16,
    candidates: Callable[[Program, list], list[Candidate]] = candidates,
) -> Candidate:
    """The smallest variant found that still fails (see the module doc); `candidates`
    makes one round's variants (JAX programs have their own)."""
    current: Candidate = (program, list(arguments))
    tried: set = {program}
    for _ in range(rounds):
        pending = [c for c in candidates(*current) if c[0] not in tried]
        found = None
        for start in range(0, len(pending), batch):
            chunk = pending[start : start + batch]
            tried.update(c[0] for c in chunk)
            verdicts = failing(chunk)
            found = next((c for c, bad in zip(chunk, verdicts) if bad), None)
            if found is not None:
                break
        if found is None:
            return current
        current = found
    return current
