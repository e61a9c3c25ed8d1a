"""Lowering accy programs to upstream MLIR.

- `scalar`: one element of each elementwise op as `arith`/`math` (target-neutral);
- `indexing`: index arithmetic through a fused group (target-neutral);
- `cpu`: the CPU target (host loops over the plan's arena);
- `lower_pass`: the `accy-lower{target=...}` pass, dispatching by target (`cuda` is added
  by `passes/lower/cuda.py`).
"""
