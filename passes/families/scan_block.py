"""`scan.block` (CUDA): one block per row scans the whole row (at most `SCAN_TILE`
elements) in shared memory; no workspace."""

from accy.passes.families.family import ExpressionFamily

FAMILY = ExpressionFamily.of("scan.block", ["scan"], source=__name__)
