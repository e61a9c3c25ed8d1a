"""Parsing speed: `accy.source.parse` (parse and verify) on generated inputs, next to
peers measured in the same run on the same numbers.

Inputs (sizes are options):
- ``dense``: one function holding one ``accy.constant dense<[v0, v1, ...]> : tensor<Nxf32>``
  of random values printed with 9 significant digits (12.7 MB for N = 1,000,000).
- ``hex``: the same constant as ``dense<"0x...">`` (its bytes in hex, 8 MB).
- ``chain``: ``%k+1 = accy.add %k, %k : tensor<4xf32>`` N times in one function.

Peers (``--peer``, default ``mlir,numpy,xdsl``):
- ``mlir``: upstream MLIR's C++ parser and verifier through the torch_mlir bindings,
  ``torch_mlir.ir.Module.parse`` on the same text with the accy ops replaced by upstream
  ones (``arith.constant`` for ``accy.constant``, ``arith.addf`` for ``accy.add``), so it
  reads the same literal and the same number of ops.
- ``numpy``: ``np.array(text.split(','), dtype=np.float64)`` on the bare numbers of the
  dense literal (no brackets): the cost of turning the decimal text into binary alone
  (dense input only).
- ``xdsl``: xDSL's own parser (``xdsl.parser.Parser(...).parse_module()``, no
  verification) on the accy text: what accy's parser adds or saves on top of xDSL.
  (On ``dense`` this is the element-by-element reading accy used before; it takes about
  30 s for N = 1,000,000.)
- ``accy-opt``: the command line, ``accy-opt FILE -o /dev/null``, on the accy text:
  parse, verify, the (empty) pass pipeline's verification and printing, plus start-up.

Every case runs in a fresh process, which reports the wall and CPU seconds of the call
alone and the process's peak resident memory (``ru_maxrss``) beside its resident memory
just before the call (imports and the text read); for ``accy`` also the share of the
verifier (measured by verifying the parsed module once more). Prints one line per case:
seconds, MB/s or ops/s, peak and added MB, and the ratio of accy's wall time to each
peer's. The machine may be shared: CPU seconds are the steadier figure.

Run: ``python benchmarks/parse_speed.py [--dense 1000000] [--chain 40000]
[--inputs dense,hex,chain] [--peer mlir,numpy,xdsl,accy-opt] [--repeat 1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def dense_values(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.uniform(-4.0, 4.0):.9g}" for _ in range(count)]


def dense_text(count: int, *, accy: bool = True, hex_form: bool = False) -> str:
    values = dense_values(count)
    if hex_form:
        literal = '"0x' + struct.pack(f"<{count}f", *map(float, values)).hex().upper() + '"'
    else:
        literal = "[" + ", ".join(values) + "]"
    t = f"tensor<{count}xf32>"
    op = "accy.constant" if accy else "arith.constant"
    ret = "func.return" if accy else "return"
    return f"func.func @c() -> {t} {{\n  %c = {op} dense<{literal}> : {t}\n  {ret} %c : {t}\n}}\n"


def chain_text(count: int, *, accy: bool = True) -> str:
    t = "tensor<4xf32>"
    op = "accy.add" if accy else "arith.addf"
    ret = "func.return" if accy else "return"
    lines = [f"func.func @chain(%0: {t}) -> {t} {{"]
    lines += [f"  %{i + 1} = {op} %{i}, %{i} : {t}" for i in range(count)]
    lines += [f"  {ret} %{count} : {t}", "}", ""]
    return "\n".join(lines)


def _rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(kind: str, path: str) -> None:
    """Run one measurement in this (fresh) process and print it as JSON."""
    text = Path(path).read_text()
    extra: dict[str, float] = {}
    if kind == "accy":
        from accy.source import parse, verify

        def run():
            module = parse(text, filename=path)
            start = time.perf_counter()
            verify(module)
            extra["verify_seconds"] = time.perf_counter() - start
            return module
    elif kind == "xdsl":
        from xdsl.parser import Parser

        from accy.source import make_context

        ctx = make_context()
        run = lambda: Parser(ctx, text, path).parse_module()
    elif kind == "mlir":
        from torch_mlir import ir

        ctx = ir.Context()

        def run():
            with ctx:
                return ir.Module.parse(text)
    elif kind == "numpy":
        import numpy as np

        body = text[text.index("[") + 1 : text.index("]")]
        run = lambda: np.array(body.split(","), dtype=np.float64)
    elif kind == "accy-opt":

        def run():
            subprocess.run(
                [sys.executable, "-m", "accy.cli.opt", path, "-o", os.devnull], check=True
            )
    else:
        raise SystemExit(f"unknown kind {kind}")
    before = _current_rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    result = run()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _rss_mb()
    if kind == "accy-opt":
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu, peak, before = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, 0.0
    if "verify_seconds" in extra:  # the second verification is not part of parse()
        seconds -= extra["verify_seconds"]
        cpu -= extra["verify_seconds"]
    del result
    print(
        json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak, "before_mb": before, **extra})
    )


def measure(kind: str, path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path)],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return {"error": tail[0] if tail else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def best(kind: str, path: Path, repeat: int) -> dict:
    runs = [measure(kind, path) for _ in range(repeat)]
    good = [r for r in runs if "error" not in r]
    return min(good, key=lambda r: r["seconds"]) if good else runs[0]


def report(label: str, result: dict, size_mb: float, ops: int | None) -> str:
    if "error" in result:
        return f"  {label:<8} failed: {result['error']}"
    s = result["seconds"]
    rate = f"{ops / s:>10,.0f} ops/s" if ops else f"{size_mb / s:>7.2f} MB/s "
    line = (
        f"  {label:<8} {s:8.3f} s (cpu {result['cpu']:7.3f} s) {rate}  "
        f"peak {result['peak_mb']:5.0f} MB (+{result['peak_mb'] - result['before_mb']:.0f})"
    )
    if "verify_seconds" in result:
        line += f"  of which verify {result['verify_seconds']:.3f} s"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dense", type=int, default=1_000_000, help="elements of the constant")
    parser.add_argument("--chain", type=int, default=40_000, help="ops of the chain")
    parser.add_argument("--inputs", default="dense,hex,chain")
    parser.add_argument("--peer", default="mlir,numpy,xdsl")
    parser.add_argument("--repeat", type=int, default=1, help="runs per case; the best is kept")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    peers = [p for p in args.peer.split(",") if p]
    print("Wall seconds of the call (cpu: its CPU seconds); peak resident MB (+ over the text")
    print("read and imports). accy = accy.source.parse; see the module docstring for peers.")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.inputs.split(","):
            if name == "dense":
                size, ops = args.dense, None
                texts = {"accy": dense_text(size), "mlir": dense_text(size, accy=False)}
            elif name == "hex":
                size, ops = args.dense, None
                texts = {
                    "accy": dense_text(size, hex_form=True),
                    "mlir": dense_text(size, accy=False, hex_form=True),
                }
            elif name == "chain":
                size, ops = args.chain, args.chain
                texts = {"accy": chain_text(size), "mlir": chain_text(size, accy=False)}
            else:
                raise SystemExit(f"unknown input {name}")
            paths = {}
            for kind, text in texts.items():
                paths[kind] = Path(tmp) / f"{name}-{kind}.mlir"
                paths[kind].write_text(text)
            paths["xdsl"] = paths["accy-opt"] = paths["accy"]
            if name == "dense":
                paths["numpy"] = paths["accy"]
            size_mb = len(texts["accy"]) / 1e6
            print(f"{name}: {size:,} {'ops' if ops else 'elements'}, {size_mb:.2f} MB of text")
            ours = best("accy", paths["accy"], args.repeat)
            print(report("accy", ours, size_mb, ops), flush=True)
            for peer in peers:
                if peer not in paths:
                    continue
                theirs = best(peer, paths[peer], args.repeat)
                line = report(peer, theirs, size_mb, ops)
                if "error" not in ours and "error" not in theirs and peer != "accy-opt":
                    line += f"  accy/{peer} = {ours['seconds'] / theirs['seconds']:.2f}x"
                print(line, flush=True)


if __name__ == "__main__":
    main()
