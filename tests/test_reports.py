"""The plan reports say what their numbers count, with units, and label CUDA-only figures.

- arena: `temporaries alone would pack into N bytes` is `FunctionArena.temporaries_size`
  (XLA's `temp_size_in_bytes`): a temporary whose buffer a result takes over in place
  is that result's buffer and is not counted, so a 128000-byte temporary can sit next to
  a small figure;
- schedule: the shared-memory limit is the CUDA target's (the report is not told the
  target), and the column is the CUDA kernels' bytes per block;
- memory: output sources print as `kernel N` / `alias N` (`str`), while the Python value's
  `repr` is `KernelWritten(work_item=N)`.
"""

from __future__ import annotations

from accy.passes.analysis import AnalysisManager
from accy.passes.memory import KernelWritten
from accy.passes.options import PlanOptions

import accy
from accy.reports import TEMPORARIES, arena_report, memory_report, schedule_report
from accy.source import parse

TARGET = "cuda"
"""The target these figures are for: a device arena holding every buffer, 256-byte aligned,
with reduce.split's partials."""

# %t (128000 B) is a temporary that the output %o takes over in place; %s is a 4-byte
# temporary (256 B aligned) and reduce.split's partials (4224 B → 4352) are a workspace.
REUSED = """
func.func @norm(%x: tensor<32000xf32>) -> tensor<32000xf32> {
  %s = accy.reduce add %x, dims = [0] : (tensor<32000xf32>) -> tensor<f32>
  %t = accy.transpose %x, dims = [0] : (tensor<32000xf32>) -> tensor<32000xf32>
  %b = accy.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<32000xf32>
  %e = accy.exponential %t : tensor<32000xf32>
  %o = accy.divide %e, %b : tensor<32000xf32>
  func.return %o : tensor<32000xf32>
}
"""

# %e (128000 B) is read by two reductions, so it is a temporary no result takes over.
KEPT = """
func.func @big(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %b = accy.broadcast_in_dim %x, dims = [] : (tensor<f32>) -> tensor<32000xf32>
  %e = accy.exponential %b : tensor<32000xf32>
  %s = accy.reduce add %e, dims = [0] : (tensor<32000xf32>) -> tensor<f32>
  %m = accy.reduce max %e, dims = [0] : (tensor<32000xf32>) -> tensor<f32>
  func.return %s, %m : tensor<f32>, tensor<f32>
}
"""


def report(function, text: str) -> str:
    return function(parse(text), AnalysisManager(None, PlanOptions(target=TARGET)))


def test_arena_header_names_its_units_and_what_temporaries_count():
    text = report(arena_report, REUSED)
    header, _columns, *rows = text.splitlines()
    assert header == (
        "arena of @norm: 256256 bytes; lower bound 256256 bytes (most bytes live at one work "
        "item); sum of aligned sizes 260608 bytes; size / lower bound 1.000; temporaries alone "
        f"would pack into 4608 bytes ({TEMPORARIES}); 0 dynamic slot(s) allocated separately"
    )
    assert "reused in place by a result" in TEMPORARIES
    # The 128000-byte temporary is the output's buffer: 256 (%s) + 4352 (partials).
    assert rows[2].split() == ["2", "temporary", "offset", "128000", "128000", "[1,", "2]"]
    assert rows[3].split()[:6] == ["3", "output", "offset", "128000", "reuses", "slot"]


def test_arena_counts_a_temporary_no_result_takes_over():
    header = report(arena_report, KEPT).splitlines()[0]
    # %e 128000 B and the partials 4224 → 4352 B are live together: 132352 bytes.
    assert "temporaries alone would pack into 132352 bytes" in header
    prep = accy.prepare(parse(KEPT), target=TARGET)
    assert prep.arena.temporaries_size == 132352


def test_schedule_labels_the_shared_memory_limit_as_cuda():
    text = report(schedule_report, KEPT)
    header, columns = text.splitlines()[:2]
    assert header == (
        "schedule: 3 work item(s); CUDA target: shared memory limit 49152 bytes per block "
        "(the CPU target uses no shared memory)"
    )
    assert columns.endswith("cuda shared bytes")


ADD = """
func.func @memory_add4(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = accy.add %a, %b : tensor<4xf32>
  func.return %s : tensor<4xf32>
}
"""


def test_memory_report_prints_output_sources_as_str():
    prep = accy.prepare(parse(ADD), target=TARGET)
    source = prep.memory.assignment_for_slot(2).output_source
    assert source == KernelWritten(work_item=0)
    assert repr(source) == "KernelWritten(work_item=0)"
    assert str(source) == "kernel 0"
    row = report(memory_report, ADD).splitlines()[4]
    assert row.split()[:3] == ["2", "@memory_add4", "%s"]
    assert row.endswith("kernel 0")
