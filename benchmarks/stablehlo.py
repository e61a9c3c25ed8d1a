"""The JAX-exported StableHLO programs: accy's memory plan and CPU time against XLA's.

    python benchmarks/stablehlo.py [--repeat 50] [--programs mlp,softmax] [--data DIR]

Per program (`DIR/NAME.stablehlo.mlir`, inputs and expected output in `NAME.npz`, XLA's
memory analysis in `NAME.xla.json`), after checking accy's CPU result against JAX's:

- temporaries: accy's planned temporaries (`prep.arena.temporaries_size`) over XLA's
  `temp_size_in_bytes` (from XLA compiling the same text in this run when JAX is
  importable, else the stored `.xla.json`); `-` where both are 0, `inf` where only XLA's is;
- arena: accy's arena over its lower bound (the most bytes live at one work item);
- time: XLA's CPU time over accy's (above 1: accy faster), median of `--repeat` calls after
  warm-up, XLA running the very same StableHLO text compiled by jaxlib's CPU client;
  skipped without JAX.

Geometric means are over the programs where a ratio is defined. accy's time is a full call
(argument checks and the ctypes call included); XLA's is `execute` on device-resident
inputs until the result is ready. XLA's CPU runtime may use several threads.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from timing import geomean, median_time

import accy

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "stablehlo"
SUFFIX = ".stablehlo.mlir"


def xla_runner(text: str, args: list[np.ndarray]):
    """(call, temp_size_in_bytes) for XLA on the CPU running `text`, or None without JAX."""
    try:
        import jax
        from jax.extend.backend import get_backend
    except ImportError:
        return None
    backend = get_backend("cpu")
    try:
        # jaxlib's client compiles StableHLO text directly (jaxlib 0.10 API).
        executable = backend.compile_and_load(text, backend.devices()[:1])
    except (AttributeError, TypeError) as error:
        print(f"XLA: cannot compile StableHLO text with this jaxlib ({error}); skipped")
        return None
    on_device = [jax.device_put(a, backend.devices()[0]) for a in args]

    def call():
        outputs = executable.execute(on_device)
        for out in outputs:
            out.block_until_ready()
        return outputs

    return call, executable.get_compiled_memory_stats().temp_size_in_bytes


def ratio_text(value: float | None, width: int) -> str:
    if value is None:
        return f"{'-':>{width}}"
    return f"{'inf':>{width}}" if value == math.inf else f"{value:{width}.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--programs", help="comma-separated names (default: all in --data)")
    parser.add_argument("--threads", type=int, default=None, help="accy's CPU threads")
    args = parser.parse_args()
    names = (
        args.programs.split(",")
        if args.programs
        else sorted(p.name[: -len(SUFFIX)] for p in args.data.glob(f"*{SUFFIX}"))
    )
    temp_ratios, arena_ratios, time_ratios = [], [], []
    xla_missing = False
    print(
        f"{'program':18} {'accy temp B':>11} {'xla temp B':>10} {'accy/xla':>8} "
        f"{'arena/lb':>8} {'accy ms':>8} {'xla ms':>8} {'xla/accy':>8}"
    )
    for name in names:
        path = args.data / f"{name}{SUFFIX}"
        text = path.read_text()
        data = np.load(args.data / f"{name}.npz")
        inputs = [data[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in data.files))]
        module = accy.import_stablehlo(text, filename=str(path))
        function = accy.compile(module, target="cpu", threads=args.threads)
        (got,) = function(*inputs)
        np.testing.assert_allclose(got, data["expected"], rtol=1e-4, atol=1e-5)
        arena = function.preparation.arena

        xla = None if xla_missing else xla_runner(text, inputs)
        xla_missing = xla is None
        if xla is not None:
            xla_call, xla_temp = xla
            (theirs,) = xla_call()
            np.testing.assert_allclose(np.asarray(theirs), data["expected"], rtol=1e-4, atol=1e-5)
        else:
            xla_temp = json.loads((args.data / f"{name}.xla.json").read_text())[
                "temp_size_in_bytes"
            ]
        ours = arena.temporaries_size
        temp = None if ours == xla_temp == 0 else (math.inf if xla_temp == 0 else ours / xla_temp)
        temp_ratios.append(temp)
        arena_ratio = arena.size / arena.lower_bound if arena.lower_bound else 1.0
        arena_ratios.append(arena_ratio)

        accy_s = median_time(lambda f=function, a=inputs: f(*a), args.repeat)
        timing = f"{accy_s * 1e3:8.3f} {'skipped':>8} {'-':>8}"
        if xla is not None:
            xla_s = median_time(xla_call, args.repeat)
            time_ratios.append(xla_s / accy_s)
            timing = f"{accy_s * 1e3:8.3f} {xla_s * 1e3:8.3f} {xla_s / accy_s:8.2f}"
        print(
            f"{name:18} {ours:11d} {xla_temp:10d} {ratio_text(temp, 8)} {arena_ratio:8.3f} {timing}"
        )

    undefined = sum(r is None or r == math.inf for r in temp_ratios)
    print(
        f"geometric mean accy/xla temporaries: {ratio_text(geomean(temp_ratios), 0)} "
        f"({len(temp_ratios) - undefined} program(s); {undefined} with XLA at 0 bytes left out)"
    )
    print(f"geometric mean arena/lower bound: {geomean(arena_ratios):.3f}")
    if time_ratios:
        print(f"geometric mean xla/accy time: {geomean(time_ratios):.2f} (> 1: accy faster)")
        print("XLA temp sizes measured in this run (the same text compiled by jaxlib)")
    else:
        print("XLA time: skipped (jax is not importable); XLA temp sizes from the .xla.json files")


if __name__ == "__main__":
    main()
