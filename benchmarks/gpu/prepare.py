"""Export every check program for the GPU machine (run HERE, where the compiler is).

    python benchmarks/gpu/prepare.py            # writes benchmarks/gpu/artifacts/

For each program of `programs.py` (the small ones and the large benchmarks) this writes
`artifacts/<name>/` with `accy.export(target="cuda")` and lists them in
`artifacts/index.json`. No arrays are shipped: `run_check.py` makes the inputs from a
seed on the GPU machine and computes the expected outputs there with numpy.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from programs import ALL_PROGRAMS

import accy
from accy.aot import export

ARTIFACTS = HERE / "artifacts"


def main() -> int:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    index = []
    for program in ALL_PROGRAMS:
        start = time.perf_counter()
        module = accy.import_stablehlo(program.text) if program.data else accy.parse(program.text)
        directory = export(module, ARTIFACTS / program.name, target="cuda")
        size = sum(f.stat().st_size for f in directory.iterdir())
        print(f"{program.name:28s} {size / 1024:8.1f} KiB  {time.perf_counter() - start:5.1f} s")
        index.append(
            {"name": program.name, "large": program.large, "features": list(program.features)}
        )
    (ARTIFACTS / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    total = sum(f.stat().st_size for f in ARTIFACTS.rglob("*") if f.is_file())
    print(f"{len(index)} exports, {total / 2**20:.1f} MiB in {ARTIFACTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
