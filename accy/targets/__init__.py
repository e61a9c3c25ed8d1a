"""Execution targets of `accy.compile`: `cpu` (`accy.targets.cpu`, loops JIT-compiled by
MLIR's ExecutionEngine) and `cuda` (`accy.targets.cuda`, when present).

A target module exposes `build(module, preparation, **options) -> Executable`.
"""
