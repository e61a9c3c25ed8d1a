"""The mutation fuzzer (`benchmarks/fuzz.py`): a fixed-seed run must find no traceback, dead
process or hang, and its mutants are the same on every run."""

from __future__ import annotations

import random

import fuzz


def test_a_fixed_seed_run_finds_nothing(capsys):
    assert fuzz.main(["--mutants", "300", "--seed", "0", "--jobs", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "300 mutants (seed 0)" in out and "0 crashed, 0 hung" in out


def test_mutants_are_repeatable_and_edited():
    first, second = fuzz.mutants(40, seed=3), fuzz.mutants(40, seed=3)
    assert [m.text for m in first] == [m.text for m in second]
    originals = dict(fuzz.seeds())
    changed = [m for m in first if m.text != originals[m.seed_name]]
    assert len(changed) > 30
    assert {e for m in first for e in m.edits} - {"none"} <= set(fuzz.MUTATIONS)


def test_each_mutation_edits_its_kind():
    rng = random.Random(0)
    text = "%0 = accy.add %a, %b : tensor<4xf32>\n  func.return %0 : tensor<4xf32>"
    seen = {}
    for _ in range(400):
        new, kind = fuzz.mutate(rng, text, ["accy.add", "accy.multiply"])
        seen.setdefault(kind, set()).add(new)
    assert any("accy.multiply" in t for t in seen["op name"])
    assert any("f32" not in t.split("\n")[0] for t in seen["element type"])
    assert any(t.count("tensor<4x") < 2 for t in seen["number"])
    assert all(len(t) < len(text) for t in seen["truncate"])
