"""Matrix products on accy's CPU target against XLA (via JAX) and numpy, side by side.

    python benchmarks/gemm.py [--set zoo|real] [--rounds 15] [--threads N] [--dtypes f32,bf16]
                              [--filter TEXT] [--markdown]

The shapes are every distinct `dot_general` of the zoo and `tests/data/stablehlo` (read
from the programs at run time), and the issue's two larger ones: a 512x256 by 256x1024
product and a batched 8x128x64 by 8x64x128 one. Each runs as a one-op StableHLO program
in f32 and in bf16 (bf16 operands and result, f32 accumulation, as JAX writes it):
accy and XLA compile the very same text; numpy computes `einsum` in f32 (for the bf16 rows
too: numpy has no fast bf16 product). Every accy result is checked against numpy's (a
wrong product prints `wrong` and no time). All of a shape's contenders (accy and XLA in
each type, numpy) run in turn, `--rounds` times (each round starting one contender
later), each a batch of calls of about 10 ms after a pause of `PAUSE`; a time is the
fastest batch's average per call (inputs in place). Ratios above 1 mean accy is faster; `f32/bf16` is accy's f32 time over its bf16
time for the same shape (above 1: bf16 faster).

Needs JAX for the XLA column (`pip install -e '.[jax]'`).
"""

from __future__ import annotations

import os

# numpy's OpenBLAS threads spin for over half a second after a product by default,
# taking the cores from whichever contender runs next: they sleep at once instead.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse
import math
import string
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from models import DATA, SUFFIX, xla_runner
from timing import geomean


@dataclass(frozen=True)
class Product:
    """One `dot_general`: operand shapes and dimension numbers."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    batching: tuple[tuple[int, ...], tuple[int, ...]]
    contracting: tuple[tuple[int, ...], tuple[int, ...]]

    @property
    def result(self) -> tuple[int, ...]:
        (lb, rb), (lc, rc) = self.batching, self.contracting
        free_l = [d for d in range(len(self.lhs)) if d not in lb and d not in lc]
        free_r = [d for d in range(len(self.rhs)) if d not in rb and d not in rc]
        return tuple(
            [self.lhs[d] for d in lb]
            + [self.lhs[d] for d in free_l]
            + [self.rhs[d] for d in free_r]
        )

    @property
    def flops(self) -> int:
        contracted = math.prod(self.lhs[d] for d in self.contracting[0])
        return 2 * math.prod(self.result) * contracted

    def label(self) -> str:
        (lb, rb), (lc, rc) = self.batching, self.contracting
        shape = "x".join(map(str, self.lhs)) + " . " + "x".join(map(str, self.rhs))
        dims = f"c{list(lc)}x{list(rc)}" + (f" b{list(lb)}x{list(rb)}" if lb else "")
        return f"{shape} {dims}".replace(" ", "")

    def einsum(self) -> str:
        """numpy's subscripts for the same contraction."""
        letters = iter(string.ascii_letters)
        (lb, rb), (lc, rc) = self.batching, self.contracting
        left = [next(letters) for _ in self.lhs]
        right = [next(letters) for _ in self.rhs]
        for l_dim, r_dim in [*zip(lb, rb), *zip(lc, rc)]:
            right[r_dim] = left[l_dim]
        free_l = [left[d] for d in range(len(self.lhs)) if d not in lb and d not in lc]
        free_r = [right[d] for d in range(len(self.rhs)) if d not in rb and d not in rc]
        out = [left[d] for d in lb] + free_l + free_r
        return f"{''.join(left)},{''.join(right)}->{''.join(out)}"

    def stablehlo(self, element: str) -> str:
        def t(shape):
            return f"tensor<{'x'.join(map(str, shape))}x{element}>"

        (lb, rb), (lc, rc) = self.batching, self.contracting
        batching = f"batching_dims = {list(lb)} x {list(rb)}, " if lb else ""
        return (
            f"func.func public @main(%a: {t(self.lhs)}, %b: {t(self.rhs)}) -> {t(self.result)} {{\n"
            f"  %0 = stablehlo.dot_general %a, %b, {batching}contracting_dims = {list(lc)} x "
            f"{list(rc)} : ({t(self.lhs)}, {t(self.rhs)}) -> {t(self.result)}\n"
            f"  return %0 : {t(self.result)}\n}}\n"
        )


EXTRA = (
    Product((512, 256), (256, 1024), ((), ()), ((1,), (0,))),
    Product((8, 128, 64), (8, 64, 128), ((0,), (0,)), ((2,), (1,))),
)
"""The issue's larger shapes (beyond the zoo's)."""


def _mm(m: int, k: int, n: int) -> Product:
    return Product((m, k), (k, n), ((), ()), ((1,), (0,)))


def _mt(m: int, k: int, n: int) -> Product:
    return Product((m, k), (n, k), ((), ()), ((1,), (1,)))


REAL = (
    _mm(256, 256, 256),
    _mm(512, 512, 512),
    _mm(1024, 1024, 1024),
    _mm(2048, 2048, 2048),
    _mm(4096, 4096, 4096),
    _mm(128, 768, 2304),  # BERT-base / GPT-2-small attention projections (q, k, v), seq 128
    _mm(128, 768, 3072),  # their FFN up, seq 128
    _mm(128, 3072, 768),  # their FFN down
    _mm(1024, 768, 3072),  # FFN up at 8 x 128 tokens
    _mm(4096, 1024, 1024),
    _mm(128, 4096, 11008),  # a Llama-7B FFN slice, seq 128
    _mt(128, 768, 2304),  # GPT-2's Conv1D layers (x . W^T: both read along K), seq 128
    _mt(128, 768, 3072),
    _mt(128, 3072, 768),
    Product((12, 128, 64), (12, 64, 128), ((0,), (0,)), ((2,), (1,))),  # attention scores
    Product((12, 128, 128), (12, 128, 64), ((0,), (0,)), ((2,), (1,))),  # attention x values
)
"""Real sizes: squares, the layer shapes of BERT-base and GPT-2-small at seq 128 (and 8 x 128
tokens; GPT-2's with its weights stored transposed, as its Conv1D layers read them), a
Llama-7B FFN slice, attention's batched products with 12 heads of 64."""


def zoo_products(folders) -> list[Product]:
    """Every distinct `dot_general` of the programs in `folders`, in first-seen order."""
    from accy.dialects import accy as ops

    import accy

    found: dict[Product, None] = {}
    for folder in folders:
        for path in sorted(Path(folder).glob(f"*{SUFFIX}")):
            module = accy.import_stablehlo(path.read_text(), filename=str(path))
            for op in module.walk():
                if isinstance(op, ops.DotGeneralOp):
                    product = Product(
                        tuple(op.lhs.type.get_shape()),
                        tuple(op.rhs.type.get_shape()),
                        op.batching,
                        op.contracting,
                    )
                    found[product] = None
    return list(found)


def measure(product: Product, elements: list[str], rounds: int, threads: int | None) -> dict:
    """Times (seconds) of accy and XLA in each element type and numpy (f32), all in the
    same interleaved rounds, keyed `accy f32`, `xla bf16`, `numpy`...; `wrong <type>` holds
    the largest error of a product accy got wrong (then not timed)."""
    import ml_dtypes
    import numpy as np

    import accy

    rng = np.random.default_rng(0)
    a32 = rng.standard_normal(product.lhs, dtype=np.float32)
    b32 = rng.standard_normal(product.rhs, dtype=np.float32)
    subscripts = product.einsum()
    calls = {}
    facts: dict = {}
    for element in elements:
        dtype = np.float32 if element == "f32" else ml_dtypes.bfloat16
        a, b = a32.astype(dtype), b32.astype(dtype)
        want = np.einsum(subscripts, a.astype(np.float32), b.astype(np.float32), optimize=True)
        text = product.stablehlo(element)
        function = accy.compile(accy.import_stablehlo(text), target="cpu", threads=threads)
        got = np.asarray(function(a, b)).astype(np.float32)
        contracted = math.prod(product.lhs[d] for d in product.contracting[0])
        tolerance = (1e-4 if element == "f32" else 2e-2) * math.sqrt(contracted)
        if not np.allclose(got, want, rtol=tolerance, atol=tolerance):
            facts[f"wrong {element}"] = float(np.max(np.abs(got - want)))
            continue
        calls[f"accy {element}"] = lambda function=function, a=a, b=b: function(a, b)
        xla = xla_runner(text, [a, b])
        if xla is not None:
            calls[f"xla {element}"] = xla[0]
    calls["numpy"] = lambda: np.einsum(subscripts, a32, b32, optimize=True)
    facts.update(interleaved_times(calls, rounds))
    return facts


PAUSE = 0.005
"""Seconds between two batches: worker threads a library leaves spinning after its calls
(numpy's BLAS, told to sleep at once by `OPENBLAS_THREAD_TIMEOUT`; XLA's pool) go to
sleep before the next contender's batch starts. Not longer: on this virtual machine a
thread pool whose threads have slept some 50 ms at a time runs, after a few such pauses,
at one core's speed (seen with accy's pool and with OpenBLAS's alike)."""


def interleaved_times(calls: dict, rounds: int, batch_seconds: float = 0.01) -> dict:
    """Seconds per call of each of `calls`: batches of calls taking about `batch_seconds`
    run in turn, `rounds` times, each round starting one contender later than the last
    (none always follows the same one); each call's figure is its fastest batch's average
    (the runs share whatever else the machine does, so their ratio is fair)."""
    counts = {}
    for name, call in calls.items():
        for _ in range(3):
            call()
        start = time.perf_counter()
        call()
        counts[name] = max(1, int(batch_seconds / max(time.perf_counter() - start, 1e-7)))
    best = dict.fromkeys(calls, math.inf)
    names = list(calls)
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            call = calls[name]
            time.sleep(PAUSE)
            start = time.perf_counter()
            for _ in range(counts[name]):
                call()
            best[name] = min(best[name], (time.perf_counter() - start) / counts[name])
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved timing rounds")
    parser.add_argument("--threads", type=int, default=None, help="accy's CPU threads")
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--filter", default="", help="only shapes whose label contains this")
    parser.add_argument(
        "--set",
        choices=("zoo", "real"),
        default="zoo",
        help="the zoo's products (and two larger), or products at real sizes (REAL)",
    )
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    products = [*zoo_products(DATA), *EXTRA] if args.set == "zoo" else list(REAL)
    products = [p for p in products if args.filter in p.label()]
    if not products:
        print("error: no shapes match", file=sys.stderr)
        return 1
    elements = args.dtypes.split(",")
    header = [
        "shape",
        "type",
        "GFLOP/s",
        "accy us",
        "xla us",
        "numpy us",
        "xla/accy",
        "numpy/accy",
        "f32/bf16",
    ]
    rows, xla_ratios, numpy_ratios, bf16_ratios = [], [], [], []
    worst: dict[str, float] = {}
    for product in products:
        f = measure(product, elements, args.rounds, args.threads)
        for element in elements:
            if f"wrong {element}" in f:
                error = f[f"wrong {element}"]
                rows.append([product.label(), element, f"wrong (max error {error:.3g})"])
                continue
            accy_time = f[f"accy {element}"]
            xla_time = f.get(f"xla {element}")
            vs_xla = None if xla_time is None else xla_time / accy_time
            vs_numpy = f["numpy"] / accy_time
            vs_f32 = None
            if element == "bf16" and "accy f32" in f:
                vs_f32 = f["accy f32"] / accy_time
                bf16_ratios.append(vs_f32)
            xla_ratios.append(vs_xla)
            numpy_ratios.append(vs_numpy)
            if vs_xla is not None:
                worst[element] = min(worst.get(element, math.inf), vs_xla)
            rows.append(
                [
                    product.label(),
                    element,
                    f"{product.flops / accy_time / 1e9:.1f}",
                    f"{accy_time * 1e6:.1f}",
                    "-" if xla_time is None else f"{xla_time * 1e6:.1f}",
                    f"{f['numpy'] * 1e6:.1f}",
                    "-" if vs_xla is None else f"{vs_xla:.2f}",
                    f"{vs_numpy:.2f}",
                    "" if vs_f32 is None else f"{vs_f32:.2f}",
                ]
            )
    width = len(header)
    rows = [r + [""] * (width - len(r)) for r in rows]
    if args.markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(width)]
        fmt = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths))
        lines = [fmt.format(*r) for r in [header, *rows]]
    lines.append("")

    def shown(value):
        return "-" if value is None else f"{value:.2f}"

    lines.append(
        f"geometric means: xla/accy {shown(geomean(xla_ratios))}, numpy/accy "
        f"{shown(geomean(numpy_ratios))} (> 1: accy faster); slowest against XLA: "
        + ", ".join(f"{e} {v:.2f}" for e, v in worst.items())
    )
    if bf16_ratios:
        lines.append(
            f"accy's f32 time over its bf16 time (> 1: bf16 faster): geomean "
            f"{shown(geomean(bf16_ratios))}, lowest {min(bf16_ratios):.2f}"
        )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
