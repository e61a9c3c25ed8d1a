"""The differential program fuzzer's core (`benchmarks/fuzz_programs.py` is its command).

- `spec`: programs as data (`Program`, `Node`): built with `accy.Builder`, printed as the
  accy dialect, edited by the shrinker;
- `generate`: random well-typed programs over the op set and the planner's fusion
  boundaries, deterministic from `(seed, index)`;
- `values`: random arguments per element type;
- `compare`: the numpy reference run with per-op noise, which sets each element's
  tolerance, and the comparison of a compiled run with it;
- `check`: one program through the CPU target (and, optionally, the CUDA export under the
  fake driver) in a watchdog worker, classified;
- `shrink`: a failing program reduced to a minimal one that fails the same way;
- `jax_mode`: random JAX functions, their StableHLO through accy against XLA, with
  StableHLO's interpreter as the judge.
"""
