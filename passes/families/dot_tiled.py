"""`dot.tiled` (CUDA): one block per output tile walks the whole contraction, staging operand
tiles in shared memory; no workspace. Every product `dot.splitk` does not take runs it."""

from accy.passes.families.family import ExpressionFamily

FAMILY = ExpressionFamily.of("dot.tiled", ["dot"], source=__name__)
