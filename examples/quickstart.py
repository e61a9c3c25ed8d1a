"""Quickstart: build a small program, look at its memory plan, run it on the CPU target.

python examples/quickstart.py
"""

import numpy as np

import accy
from accy.reports import arena_report, memory_report, schedule_report

# tanh((x + y) * scale): the add and multiply fuse into the tanh's kernel.
builder = accy.Builder()
vec = builder.tensor("f32", [1 << 20])
fb = builder.begin_function("fused_scale_add", [vec, vec, vec], [vec])
fb.set_location("quickstart.py", 13, 1)
x, y, scale = fb.parameter(0), fb.parameter(1), fb.parameter(2)
hidden = fb.add(x, y)  # fused away: no storage of its own
fb.return_([fb.tanh(fb.multiply(hidden, scale))])
fb.finish()
module = builder.finish()
print(module)

exe = accy.compile(module, target="cpu")
prep = exe.preparation
for report in (schedule_report, memory_report, arena_report):
    print(report(module, prep.manager), end="\n\n")

rng = np.random.default_rng(0)
inputs = [rng.standard_normal(1 << 20, dtype=np.float32) for _ in range(3)]
(out,) = exe(*inputs)
expected = np.tanh((inputs[0] + inputs[1]) * inputs[2])
print("cpu target matches numpy:", np.allclose(out, expected, rtol=1e-5, atol=1e-6))
(oracle,) = accy.reference.run(module, "fused_scale_add", *inputs)
print("cpu target matches the reference interpreter:", np.allclose(out, oracle, rtol=1e-5))
