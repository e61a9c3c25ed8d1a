"""`accy-drop-loop-invariants`: stop carrying values a loop never changes.

A value that an `accy.iterate` or `accy.while` body yields unchanged (its block argument
`i` at position `i`) holds its init in every iteration: its uses in the loop's regions
and after the loop read the init, and the loop carries the other values only. JAX's
`lax.scan` and `lax.while_loop` carry every value the body reads (weights, the sequence
scanned) this way; carried, each would be copied into a loop buffer of its own before the
first iteration. A `while` whose every value is invariant is left as it is (it runs not
at all or forever).
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.dialects import accy as ops
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern


class DropLoopInvariants(RewritePattern):
    """A loop carrying values its body yields unchanged → a loop carrying the others."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (ops.IterateOp, ops.WhileOp)):
            return
        body = op.body.block
        terminator = body.last_op
        assert isinstance(terminator, ops.YieldOp)
        yielded = list(terminator.values)
        invariant = [i for i, v in enumerate(yielded) if v is body.args[i]]
        if not invariant:
            return
        kept = [i for i in range(len(yielded)) if i not in invariant]
        if not kept and isinstance(op, ops.WhileOp):
            return
        blocks = [body] if isinstance(op, ops.IterateOp) else [op.cond.block, body]
        for i in invariant:
            for block in blocks:
                block.args[i].replace_all_uses_with(op.inits[i])
        rewriter.replace(terminator, ops.YieldOp([yielded[i] for i in kept]))
        for i in reversed(invariant):
            for block in blocks:
                block.erase_arg(block.args[i])
        inits = [op.inits[i] for i in kept]
        regions = list(op.regions)
        for region in regions:
            op.detach_region(region)
        if isinstance(op, ops.IterateOp):
            loop = ops.IterateOp(op.trip_count.value.data, inits, *regions)
        else:
            loop = ops.WhileOp(inits, *regions)
        loop.attributes.update(op.attributes)
        results = [None] * len(yielded)
        for position, i in enumerate(kept):
            results[i] = loop.res[position]
        for i in invariant:
            results[i] = op.inits[i]
        rewriter.replace(op, loop, new_results=results)


def drop_loop_invariants(module: ModuleOp) -> None:
    """Stop carrying every loop invariant of `module` (see the module docstring)."""
    PatternRewriteWalker(DropLoopInvariants()).rewrite_module(module)


@dataclass(frozen=True)
class DropLoopInvariantsPass(ModulePass):
    """Drops the values loops yield unchanged from what they carry (the module doc)."""

    name = "accy-drop-loop-invariants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        drop_loop_invariants(op)
