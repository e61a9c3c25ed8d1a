"""`reduce.row` (CUDA): one block per row folds the whole row in shared memory and
registers; no workspace. Every reduction `reduce.split` does not take runs it."""

from accy.passes.families.family import ExpressionFamily

FAMILY = ExpressionFamily.of("reduce.row", ["reduce"], source=__name__)
