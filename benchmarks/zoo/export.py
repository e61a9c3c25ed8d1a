"""Export the zoo (`programs.py`) as StableHLO with its inputs, JAX's outputs and XLA's
memory analysis and CPU time: what `benchmarks/models.py` reads.

    python benchmarks/zoo/export.py [--programs a,b] [--out benchmarks/zoo/data] [--repeat 30]

Per program NAME, in `--out`: `NAME.stablehlo.mlir` (`jax.jit(f).lower(*args).as_text()`
with debug locations, paths relative to the repository), `NAME.npz` (`arg0`, `arg1`, ...
and JAX's `out0`, `out1`, ...; bf16 arrays as their uint16 bits under `KEY.bf16`) and
`NAME.xla.json` (XLA's `memory_analysis()` of the exported program, the median CPU time of
`--repeat` calls of the same function jitted without donation, the comparison tolerances
and a line on what the program is). Needs JAX (`pip install -e '.[jax]'`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zlib
from pathlib import Path

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from programs import PROGRAMS

jax.config.update("jax_platforms", "cpu")


def flat(values) -> list[np.ndarray]:
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(values)]


def arrays(prefix: str, values: list[np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for i, value in enumerate(values):
        if value.dtype.name == "bfloat16":
            out[f"{prefix}{i}.bf16"] = value.view(np.uint16)
        else:
            out[f"{prefix}{i}"] = value
    return out


def export(name: str, out: Path, repeat: int) -> None:
    program = PROGRAMS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    args = program.arguments(rng)
    jitted = jax.jit(program.function, donate_argnums=program.donate)
    lowered = jitted.lower(*args)
    text = lowered.as_text(debug_info=True).replace(str(ROOT) + "/", "")
    compiled = lowered.compile()
    memory = compiled.memory_analysis()
    outputs = flat(compiled(*[np.array(a, copy=True) for a in args]))

    plain = jax.jit(program.function)
    on_device = [jax.device_put(a) for a in args]
    jax.block_until_ready(plain(*on_device))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(plain(*on_device))
        times.append(time.perf_counter() - start)

    (out / f"{name}.stablehlo.mlir").write_text(text)
    np.savez(
        out / f"{name}.npz",
        **arrays("arg", [np.asarray(a) for a in args]),
        **arrays("out", outputs),
    )
    facts = {
        "about": program.about,
        "temp_size_in_bytes": memory.temp_size_in_bytes,
        "argument_size_in_bytes": memory.argument_size_in_bytes,
        "output_size_in_bytes": memory.output_size_in_bytes,
        "alias_size_in_bytes": memory.alias_size_in_bytes,
        "xla_cpu_seconds": statistics.median(times),
        "rtol": program.rtol,
        "atol": program.atol,
        "jax_version": jax.__version__,
        "backend": "cpu",
    }
    (out / f"{name}.xla.json").write_text(json.dumps(facts, indent=1) + "\n")
    print(f"{name}: {len(text) // 1024} KiB of StableHLO, XLA temp {memory.temp_size_in_bytes} B")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", help="comma-separated names (default: all)")
    parser.add_argument("--out", type=Path, default=HERE / "data")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    names = args.programs.split(",") if args.programs else list(PROGRAMS)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        export(name, args.out, args.repeat)


if __name__ == "__main__":
    main()
