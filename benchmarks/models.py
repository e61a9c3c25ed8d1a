"""Real models through accy's CPU target: what compiles, whether it is right, its memory
plan and time against XLA's.

    python benchmarks/models.py [--data DIR ...] [--programs a,b] [--repeat 20]
                                [--threads N] [--timeout S] [--markdown]

Reads every `NAME.stablehlo.mlir` with its `NAME.npz` (inputs `arg0`, `arg1`, ...; JAX's
outputs `out0`, ... or `expected`; bf16 as uint16 bits under `KEY.bf16`) and
`NAME.xla.json` (XLA's memory analysis, and its CPU time and the comparison tolerances for
the zoo) in each `--data` folder: by default the zoo (`benchmarks/zoo/data`, written by
`benchmarks/zoo/export.py`) and the five programs of `tests/data/stablehlo`. Per program:

- result: `correct` (every output within the program's rtol/atol of JAX's), `wrong` (the
  first difference), `refused` (accy's first diagnostic), `crash` or `timeout` (each program
  runs in a watchdog worker process, `benchmarks/watchdog.py`);
- temporaries: accy's planned temporaries (`arena.temporaries_size`) against XLA's
  `temp_size_in_bytes` (XLA compiling the same text in this run when JAX is importable,
  else the stored figure) and IREE's transient memory (`iree_transient_bytes`, where IREE
  is installed; `--no-iree` leaves it out), and accy's arena over its lower bound;
- memory at run time: what one call touched (`touched_bytes`: the rise of the process's
  peak resident memory, in pages) against what the plan allocates for it (the arena and
  the results' arrays, "planned");
- time: XLA's CPU time over accy's (above 1: accy faster), medians of `--repeat` calls,
  XLA running the very same StableHLO text compiled by jaxlib's CPU client on inputs put
  on its device first; without JAX, skipped. Geometric means close the table.

Needs JAX only for the XLA columns (`pip install -e '.[jax]'`).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from timing import median_time
from watchdog import Outcome, run_in_workers

ROOT = Path(__file__).resolve().parents[1]
DATA = (ROOT / "benchmarks" / "zoo" / "data", ROOT / "tests" / "data" / "stablehlo")
SUFFIX = ".stablehlo.mlir"


@dataclass(frozen=True)
class Model:
    id: str
    path: Path


# ---------------------------------------------------------------------------------------
# One program, in a worker
# ---------------------------------------------------------------------------------------


def load_arrays(path: Path) -> tuple[list, list]:
    """The inputs and expected outputs stored in an `.npz` (bf16 restored)."""
    import ml_dtypes
    import numpy as np

    data = np.load(path)
    values = {}
    for key in data.files:
        if key.endswith(".bf16"):
            values[key.removesuffix(".bf16")] = data[key].view(ml_dtypes.bfloat16)
        else:
            values[key] = data[key]

    def numbered(prefix: str) -> list:
        count = sum(1 for k in values if k.startswith(prefix) and k[len(prefix) :].isdigit())
        return [values[f"{prefix}{i}"] for i in range(count)]

    outputs = numbered("out") or [values["expected"]]
    return numbered("arg"), outputs


def xla_runner(text: str, args: list):
    """`(call, temp_size_in_bytes)` for XLA on the CPU running `text`, or None without
    JAX. `call()` returns the outputs as numpy arrays."""
    try:
        import jax
        from jax.extend.backend import get_backend
    except ImportError:
        return None
    import numpy as np

    backend = get_backend("cpu")
    try:  # jaxlib's client compiles StableHLO text directly (jaxlib 0.10 API)
        executable = backend.compile_and_load(text, backend.devices()[:1])
    except (AttributeError, TypeError):
        return None
    device = backend.devices()[0]
    on_device = [jax.device_put(a, device) for a in args]
    # XLA takes donated parameters' buffers (their memory is reused for outputs): a program
    # that donates gets fresh copies of its arguments on every call (timed with it).
    donates = "tf.aliasing_output" in text or "jax.buffer_donor" in text

    def call():
        arguments = [jax.device_put(a, device) for a in args] if donates else on_device
        outputs = executable.execute(arguments)
        for out in outputs:
            out.block_until_ready()
        return outputs

    def results():
        return [np.asarray(o) for o in call()]

    temp = executable.get_compiled_memory_stats().temp_size_in_bytes
    return call, results, temp


def iree_runner(text: str, args: list):
    """`(call, results, compile seconds)` for IREE on the CPU (`llvm-cpu` compiled for this
    host, the `local-task` driver) running `text`; None without IREE
    (`pip install iree-base-compiler iree-base-runtime`), or the first line of its error
    where it does not compile. `call()` runs it on the arguments already on its device,
    `results()` returns the outputs as numpy arrays."""
    try:
        from iree import compiler, runtime
    except ImportError:
        return None
    import numpy as np

    start = time.perf_counter()
    try:
        binary = compiler.compile_str(
            text,
            target_backends=["llvm-cpu"],
            input_type="stablehlo",
            extra_args=["--iree-llvmcpu-target-cpu=host"],
        )
    except compiler.CompilerToolError as error:
        return next((line for line in str(error).splitlines() if "error" in line), "error")
    seconds = time.perf_counter() - start
    config = runtime.Config("local-task")
    context = runtime.SystemContext(config=config)
    module = runtime.VmModule.copy_buffer(context.instance, binary)
    context.add_vm_module(module)
    main = context.modules[module.name]["main"]
    on_device = [runtime.asdevicearray(config.device, a) for a in args]

    def call():
        return main(*on_device)

    def results():
        outputs = call()
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        return [np.asarray(o.to_host()) for o in outputs]

    return call, results, seconds


def _mismatch(got, want, rtol: float, atol: float) -> str | None:
    import numpy as np

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    a, e = got.astype(np.float64), want.astype(np.float64)
    bad = ~(np.isclose(a, e, rtol=rtol, atol=atol) | (np.isnan(a) & np.isnan(e)))
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return f"{int(bad.sum())} of {bad.size} elements off; at {list(index)}: {a[index]!r} vs {e[index]!r}"


def iree_transient_bytes(text: str) -> int | None:
    """IREE's transient memory for `text` (`llvm-cpu` for this host: the
    `transient-memory-size` of `--iree-scheduling-dump-statistics-format=json`), or None
    without IREE or where it does not compile."""
    import tempfile

    try:
        from iree import compiler
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as directory:
        stats = f"{directory}/statistics.json"
        flags = [
            "--iree-llvmcpu-target-cpu=host",
            "--iree-scheduling-dump-statistics-format=json",
            f"--iree-scheduling-dump-statistics-file={stats}",
        ]
        try:
            compiler.compile_str(
                text, target_backends=["llvm-cpu"], input_type="stablehlo", extra_args=flags
            )
            found = json.loads(Path(stats).read_text())
        except (compiler.CompilerToolError, OSError, ValueError):
            return None
    return found["stream-aggregate"]["execution"]["transient-memory-size"]


def _status_bytes(key: str) -> int:
    """A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def touched_bytes(call) -> int | None:
    """What one `call()` touched: the rise of the process's peak resident memory (`VmHWM`,
    reset by writing 5 to `/proc/self/clear_refs`) over what was resident before it, in
    whole pages, after glibc's `malloc_trim` hands the allocator's free pages back (the
    outputs it allocates included); None where /proc or glibc does not allow it."""
    try:
        ctypes.CDLL(None).malloc_trim(0)  # free pages go back: the call touches its own
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        before, _ = _status_bytes("VmRSS"), _status_bytes("VmHWM")
    except (OSError, KeyError, AttributeError):
        return None
    call()
    return max(0, _status_bytes("VmHWM") - before)


def run_model(model: Model, options: dict, report_stage) -> Outcome:
    """Import, compile, check and time one program (a worker's target)."""
    import traceback

    import accy

    facts_path = model.path.with_name(model.path.name.removesuffix(SUFFIX) + ".xla.json")
    stored = json.loads(facts_path.read_text()) if facts_path.exists() else {}
    facts = {"xla_temp": stored.get("temp_size_in_bytes"), "about": stored.get("about", "")}
    rtol, atol = stored.get("rtol", 1e-4), stored.get("atol", 1e-5)
    stage = "load"
    try:
        text = model.path.read_text()
        inputs, expected = load_arrays(model.path.with_name(model.id + ".npz"))
        stage = "import"
        report_stage(stage)
        shown = model.path.relative_to(ROOT) if model.path.is_relative_to(ROOT) else model.path
        module = accy.import_stablehlo(text, filename=str(shown))
        stage = "compile"
        report_stage(stage)
        function = accy.compile(module, target="cpu", threads=options["threads"])
        stage = "run"
        report_stage(stage)
        outputs = function(*inputs)
    except accy.AccyError as error:
        return Outcome(model.id, "REFUSED", error.diagnostic(), stage, facts=facts)
    except Exception as error:  # noqa: BLE001 - anything but a diagnostic is a crash
        frames = traceback.extract_tb(error.__traceback__)[-2:]
        where = "; ".join(f"{Path(f.filename).name}:{f.lineno}" for f in frames)
        detail = f"{type(error).__name__}: {error} (at {where})"
        return Outcome(model.id, "CRASH", detail, stage, facts=facts)
    arena = function.preparation.arena
    facts.update(
        accy_temp=arena.temporaries_size,
        arena_ratio=arena.size / arena.lower_bound if arena.lower_bound else 1.0,
    )
    for i, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        if problem := _mismatch(got, want, rtol, atol):
            return Outcome(model.id, "WRONG", f"output #{i}: {problem}", "check", facts=facts)
    facts["touched"] = touched_bytes(lambda: function(*inputs))
    facts["planned"] = arena.size + sum(o.nbytes for o in outputs)
    stage = "time"
    report_stage(stage)
    facts["accy_s"] = median_time(lambda: function(*inputs), options["repeat"])
    if options.get("iree", True):
        facts["iree_temp"] = iree_transient_bytes(text)
    xla = xla_runner(text, inputs)
    if xla is not None:
        call, results, temp = xla
        facts["xla_temp"] = temp
        for i, (theirs, want) in enumerate(zip(results(), expected, strict=True)):
            if problem := _mismatch(theirs, want, rtol, atol):
                facts["xla_note"] = f"XLA's output #{i} differs from the stored one: {problem}"
        facts["xla_s"] = median_time(call, options["repeat"])
    return Outcome(model.id, "PASS", "", "done", facts=facts)


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------

RESULT = {"PASS": "correct", "WRONG": "wrong", "REFUSED": "refused", "CRASH": "crash"}


def geomean(values: list[float]) -> float | None:
    kept = [v for v in values if v is not None and 0 < v < math.inf]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else None


def ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return "inf" if value == math.inf else f"{value:.2f}"


def _over(ours: int | None, theirs: int | None) -> float | None:
    """`ours / theirs` of two byte counts (inf over 0; None when either is unknown or both
    are 0)."""
    if ours is None or theirs is None or not (ours or theirs):
        return None
    return math.inf if theirs == 0 else ours / theirs


def table(outcomes: list[Outcome], markdown: bool) -> str:
    header = ["program", "result", "accy temp B", "xla temp B", "accy/xla", "iree temp B",
              "accy/iree", "arena/lb", "touched B", "planned B", "accy ms", "xla ms",
              "xla/accy"]  # fmt: skip
    rows, temps, iree_temps, arenas, times = [], [], [], [], []
    for o in outcomes:
        f = o.facts
        ours, theirs, iree = f.get("accy_temp"), f.get("xla_temp"), f.get("iree_temp")
        temp, iree_temp = _over(ours, theirs), _over(ours, iree)
        iree_temps.append(iree_temp)
        speed = f["xla_s"] / f["accy_s"] if "xla_s" in f and "accy_s" in f else None
        temps.append(temp)
        times.append(speed)
        if "arena_ratio" in f:
            arenas.append(f["arena_ratio"])
        rows.append(
            [
                o.id,
                RESULT.get(o.kind, o.kind.lower()),
                "-" if ours is None else str(ours),
                "-" if theirs is None else str(theirs),
                ratio(temp),
                "-" if iree is None else str(iree),
                ratio(iree_temp),
                f"{f['arena_ratio']:.3f}" if "arena_ratio" in f else "-",
                "-" if f.get("touched") is None else str(f["touched"]),
                "-" if f.get("planned") is None else str(f["planned"]),
                f"{f['accy_s'] * 1e3:.3f}" if "accy_s" in f else "-",
                f"{f['xla_s'] * 1e3:.3f}" if "xla_s" in f else "-",
                ratio(speed),
            ]
        )
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        fmt = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths))
        lines = [fmt.format(*r) for r in [header, *rows]]
    correct = sum(o.kind == "PASS" for o in outcomes)
    lines.append("")
    lines.append(f"{correct} of {len(outcomes)} programs correct")
    lines.append(
        f"geometric means: accy/xla temporaries {ratio(geomean(temps))}, accy/iree "
        f"{ratio(geomean(iree_temps))}, arena/lower bound {ratio(geomean(arenas))}, xla/accy "
        f"time {ratio(geomean(times))} (> 1: accy faster)"
    )
    if not any(t is not None for t in times):
        lines.append("XLA time: skipped (jax is not importable); XLA temp sizes from .xla.json")
    notes = [o for o in outcomes if o.kind != "PASS" or o.facts.get("xla_note")]
    if notes:
        lines.append("")
        for o in notes:
            text = o.detail or o.facts.get("xla_note", "")
            lines += textwrap.wrap(f"{o.id} ({RESULT.get(o.kind, o.kind.lower())}): {text}",
                                   width=110, subsequent_indent="    ")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data", type=Path, action="append", help="default: the zoo and tests/data/stablehlo"
    )
    parser.add_argument("--programs", help="comma-separated names (default: all)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="accy's CPU threads")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (1 for timing)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per program")
    parser.add_argument("--no-iree", action="store_true", help="leave IREE's column out")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    models = []
    for folder in args.data or DATA:
        for path in sorted(folder.glob(f"*{SUFFIX}")):
            models.append(Model(path.name.removesuffix(SUFFIX), path))
    if args.programs:
        wanted = set(args.programs.split(","))
        models = [m for m in models if m.id in wanted]
    if not models:
        print("error: no programs found", file=sys.stderr)
        return 1
    outcomes = run_in_workers(
        models,
        "models:run_model",
        jobs=args.jobs,
        timeout=args.timeout,
        options={"threads": args.threads, "repeat": args.repeat, "iree": not args.no_iree},
    )
    print(table(outcomes, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
