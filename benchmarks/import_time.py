"""Start-up time of `accy-opt`: the wall time of fresh processes, against a peer.

Measured, each as the median of ``--runs`` (default 5) fresh processes:
- ``accy-opt --version``: imports and argument parsing only;
- ``accy-opt FILE``: parse, verify and print a 4-op program (no passes);
- ``python -c 'import accy'``: the package's lazy top level;
and two peers measured in the same run, so that a loaded or slow machine shows in both:
- ``python -c pass``: the interpreter's own start;
- ``python -c 'import xdsl.xdsl_opt_main'``: xDSL's opt driver, which accy-opt builds on
  (its dialects load at least this much).

Each accy figure is printed with its ratio to both peers. The accy-opt runs use the
``accy-opt`` next to this Python (the virtual environment's), else the one on PATH.

Run: ``python benchmarks/import_time.py [--runs 5]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = """\
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %b : tensor<4xf32>
  %1 = accy.multiply %0, %a : tensor<4xf32>
  %2 = accy.exponential %1 : tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""


def accy_opt() -> str:
    candidate = Path(sys.executable).parent / "accy-opt"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which("accy-opt")
    if found is None:
        sys.exit("accy-opt is not installed (pip install -e '.[dev]')")
    return found


def wall_time(command: list[str], runs: int) -> float:
    """The median wall time of `runs` fresh processes of `command`, in seconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per command (median)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "prog.mlir"
        program.write_text(PROGRAM)
        tool = accy_opt()
        peers = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import xdsl.xdsl_opt_main'": [
                sys.executable,
                "-c",
                "import xdsl.xdsl_opt_main",
            ],
        }
        measured = {
            "accy-opt --version": [tool, "--version"],
            "accy-opt FILE (parse+print)": [tool, str(program)],
            "python -c 'import accy'": [sys.executable, "-c", "import accy"],
        }
        # The peers run before and after accy (the faster figure counts), so that a change
        # of machine load during the run shows.
        peer_times = {name: wall_time(command, args.runs) for name, command in peers.items()}
        times = {name: wall_time(command, args.runs) for name, command in measured.items()}
        peer_times = {
            name: min(peer_times[name], wall_time(command, args.runs))
            for name, command in peers.items()
        }

    print(f"median of {args.runs} fresh processes each")
    for name, seconds in peer_times.items():
        print(f"  peer  {name:<40} {seconds:7.3f} s")
    bare, xdsl = peer_times.values()
    for name, seconds in times.items():
        print(
            f"  accy  {name:<40} {seconds:7.3f} s  "
            f"{seconds / bare:6.2f}x python -c pass  {seconds / xdsl:5.2f}x import xdsl opt"
        )


if __name__ == "__main__":
    main()
