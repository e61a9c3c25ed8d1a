"""Convolutions on accy's CPU target against XLA (via JAX), side by side, in every form
training writes.

    python benchmarks/convolutions.py [--rounds 10] [--threads N] [--filter TEXT] [--markdown]

Each case is a JAX function (a convolution, or the input or weight gradient JAX derives
for one) lowered to StableHLO; accy and XLA compile the very same text and run it on the
same arrays, in interleaved rounds (`gemm.interleaved_times`). Every accy result is checked
against XLA's first (a wrong one prints `wrong` and no time). Ratios above 1: accy faster.
The shapes: ResNet-50's layers at 224x224 batch 1 (3x3 64->64 at 56x56 and the 1x1s
around it, the strided 3x3 and 1x1 that open stage 2, the 3x3s of stages 3 and 4, the
strided 7x7 stem), input and weight gradients (a depthwise one's: batch groups), a depthwise 3x3 at
112x112x32, a grouped 1-D convolution (wav2vec2's positional one: 768 features, kernel
128, 16 groups, 49 frames), an NCHW one, and bf16 ones.

Needs JAX (`pip install -e '.[jax]'`).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse
import sys
from dataclasses import dataclass
from functools import partial

from gemm import interleaved_times
from models import xla_runner
from timing import geomean, print_table


@dataclass(frozen=True)
class Case:
    name: str
    x: tuple[int, ...]
    w: tuple[int, ...]
    strides: tuple[int, ...]
    padding: str
    numbers: tuple[str, str, str]
    groups: int = 1
    form: str = "forward"  # forward, input_grad, weight_grad
    dtype: str = "float32"


NHWC = ("NHWC", "HWIO", "NHWC")
CASES = (
    Case("3x3 56x56x64->64", (1, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME", NHWC),
    Case(
        "3x3 input grad", (1, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME", NHWC, form="input_grad"
    ),
    Case(
        "3x3 weight grad", (1, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME", NHWC, form="weight_grad"
    ),
    Case("1x1 56x56x64->256", (1, 56, 56, 64), (1, 1, 64, 256), (1, 1), "SAME", NHWC),
    Case(
        "1x1 input grad", (1, 56, 56, 64), (1, 1, 64, 256), (1, 1), "SAME", NHWC, form="input_grad"
    ),
    Case("3x3/2 56x56x128->128", (1, 56, 56, 128), (3, 3, 128, 128), (2, 2), "SAME", NHWC),
    Case(
        "3x3/2 input grad",
        (1, 56, 56, 128),
        (3, 3, 128, 128),
        (2, 2),
        "SAME",
        NHWC,
        form="input_grad",
    ),
    Case("3x3 14x14x256->256", (1, 14, 14, 256), (3, 3, 256, 256), (1, 1), "SAME", NHWC),
    Case("3x3 7x7x512->512", (1, 7, 7, 512), (3, 3, 512, 512), (1, 1), "SAME", NHWC),
    Case(
        "3x3 7x7x512 weight grad",
        (1, 7, 7, 512),
        (3, 3, 512, 512),
        (1, 1),
        "SAME",
        NHWC,
        form="weight_grad",
    ),
    Case("1x1/2 56x56x256->512", (1, 56, 56, 256), (1, 1, 256, 512), (2, 2), "SAME", NHWC),
    Case("7x7/2 stem 224x224x3->64", (1, 224, 224, 3), (7, 7, 3, 64), (2, 2), "SAME", NHWC),
    Case(
        "depthwise 3x3 112x112x32",
        (1, 112, 112, 32),
        (3, 3, 1, 32),
        (1, 1),
        "SAME",
        NHWC,
        groups=32,
    ),
    Case(
        "depthwise 3x3 weight grad",
        (1, 112, 112, 32),
        (3, 3, 1, 32),
        (1, 1),
        "SAME",
        NHWC,
        groups=32,
        form="weight_grad",
    ),
    Case(
        "grouped 1-D k128 g16 49x768",
        (1, 49, 768),
        (128, 48, 768),
        (1,),
        "SAME",
        ("NWC", "WIO", "NWC"),
        groups=16,
    ),
    Case(
        "NCHW 3x3 56x56x64->64",
        (1, 64, 56, 56),
        (64, 64, 3, 3),
        (1, 1),
        "SAME",
        ("NCHW", "OIHW", "NCHW"),
    ),
    Case(
        "bf16 3x3 56x56x64->64",
        (1, 56, 56, 64),
        (3, 3, 64, 64),
        (1, 1),
        "SAME",
        NHWC,
        dtype="bfloat16",
    ),
)


def lowered(case: Case):
    """`(StableHLO text, arguments)` of `case`."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    dtype = jnp.dtype(case.dtype)
    x = jnp.asarray(rng.uniform(-1, 1, case.x), dtype)
    w = jnp.asarray(rng.uniform(-1, 1, case.w), dtype)
    conv = partial(
        jax.lax.conv_general_dilated,
        window_strides=case.strides,
        padding=case.padding,
        dimension_numbers=case.numbers,
        feature_group_count=case.groups,
    )
    y = conv(x, w)
    g = jnp.asarray(rng.uniform(-1, 1, y.shape), dtype)
    if case.form == "forward":
        function, args = conv, (x, w)
    elif case.form == "input_grad":
        function = lambda w, g: jax.vjp(lambda x: conv(x, w), x)[1](g)[0]
        args = (w, g)
    else:
        function = lambda x, g: jax.vjp(lambda w: conv(x, w), w)[1](g)[0]
        args = (x, g)
    text = jax.jit(function).lower(*args).as_text()
    return text, [np.asarray(a) for a in args]


def measure(case: Case, rounds: int, threads: int | None) -> dict:
    import numpy as np

    import accy

    text, args = lowered(case)
    xla = xla_runner(text, args)
    if xla is None:
        raise SystemExit("error: needs JAX (pip install -e '.[jax]')")
    want = np.asarray(xla[0]()[0], dtype=np.float32)
    exe = accy.compile(accy.import_stablehlo(text), threads=threads)
    got = np.asarray(exe(*args)[0], dtype=np.float32)
    tolerance = 5e-2 if case.dtype == "bfloat16" else 1e-3
    scale = max(1.0, float(np.max(np.abs(want))))
    if not np.allclose(got, want, rtol=tolerance, atol=tolerance * scale):
        return {"wrong": float(np.max(np.abs(got - want)))}
    calls = {"accy": lambda: exe(*args), "xla": xla[0]}
    return interleaved_times(calls, rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="accy's CPU threads")
    parser.add_argument("--filter", default="", help="only cases whose name contains this")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.filter in c.name]
    if not cases:
        print("error: no case matches", file=sys.stderr)
        return 1
    header = ["convolution", "accy ms", "xla ms", "xla/accy"]
    rows, ratios = [], []
    for case in cases:
        f = measure(case, args.rounds, args.threads)
        if "wrong" in f:
            rows.append([case.name, f"wrong (max error {f['wrong']:.3g})", "", ""])
            continue
        ratios.append(f["xla"] / f["accy"])
        rows.append(
            [case.name, f"{f['accy'] * 1e3:.3f}", f"{f['xla'] * 1e3:.3f}", f"{ratios[-1]:.2f}"]
        )
    print_table(header, rows, args.markdown)
    if ratios:
        print(
            f"\ngeometric mean xla/accy {geomean(ratios):.2f} (> 1: accy faster), "
            f"slowest {min(ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
