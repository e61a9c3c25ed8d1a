"""Quickstart: build a small program, plan its memory, and run it with the reference.

    python examples/quickstart.py
"""

import numpy as np

import accy
from accy import reference
from accy.reports import memory_report, schedule_report

builder = accy.Builder()
vec = builder.tensor("f32", [1024])
fb = builder.begin_function("fused_scale_add", [vec, vec, vec], [vec])
fb.set_location("quickstart.py", 14, 1)
x, y, scale = fb.parameter(0), fb.parameter(1), fb.parameter(2)
hidden = fb.add(x, y)  # fused into the multiply: no storage of its own
fb.return_([fb.tanh(fb.multiply(hidden, scale))])
fb.finish()
module = builder.finish()

print(module)
prep = accy.prepare(module)
print(schedule_report(module, prep.manager))
print(memory_report(module, prep.manager))

rng = np.random.default_rng(0)
inputs = [rng.standard_normal(1024, dtype=np.float32) for _ in range(3)]
(out,) = reference.run(module, "fused_scale_add", *inputs)
expected = np.tanh((inputs[0] + inputs[1]) * inputs[2])
print("reference matches numpy:", np.allclose(out, expected, rtol=1e-6))
