"""The differential program fuzzer (`benchmarks/fuzz_programs.py`, `benchmarks/program_fuzz/`):
a fixed-seed sample of generated programs through the CPU target against the numpy
reference, and the generator, the tolerances, the classification and the shrinker."""

from __future__ import annotations

import numpy as np
import pytest
from program_fuzz import check, compare, generate, shrink, spec, values
from program_fuzz.spec import Program, Tensor, node
from watchdog import Outcome, run_in_workers

import accy

SEED = 0
SAMPLE = 200

KNOWN_FAILURES: dict[int, str] = {}
"""Programs of the sample that fail today, each with the failure class it shows; the
regression tests of `tests/lower/test_fuzz_regressions.py` hold their minimal forms.
When a fix makes one pass, the sample test fails until it is removed here."""


# ---------------------------------------------------------------------------------------
# The sample
# ---------------------------------------------------------------------------------------


def test_a_fixed_seed_sample_agrees_with_the_reference():
    """200 generated programs compile for the CPU and agree with the numpy reference:
    no WRONG, INTERNAL, CRASH or hang (the watchdog's timeout is only a hang guard), no
    program the generator got wrong; refusals are allowed (the command counts them)."""
    cases = [check.Case(f"program{i}", SEED, i) for i in range(SAMPLE)]
    outcomes = run_in_workers(cases, "program_fuzz.check:run_case", jobs=2, timeout=900)
    failed = {
        i: f"{o.kind} in {o.stage}: {o.detail[:300]}"
        for i, o in enumerate(outcomes)
        if o.kind in (*check.FAILURES, "INVALID")
    }
    unexpected = {i: d for i, d in failed.items() if i not in KNOWN_FAILURES}
    fixed = sorted(set(KNOWN_FAILURES) - set(failed))
    assert not unexpected, "\n".join(f"program {i}: {d}" for i, d in unexpected.items())
    assert not fixed, f"programs {fixed} pass now: remove them from KNOWN_FAILURES"
    passed = sum(o.kind == "PASS" for o in outcomes)
    assert passed >= SAMPLE * 0.9


# ---------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------


def test_every_generated_program_verifies_and_prints_text_that_parses_back():
    for index in range(60):
        program = generate.program(7, index)
        text = spec.text(program)
        assert str(accy.parse(text)) == text
        assert 1 <= len(program.nodes) <= 40 and program.results


def test_programs_and_arguments_depend_only_on_seed_and_index():
    first = [generate.program(3, i) for i in range(10)]
    assert first == [generate.program(3, i) for i in range(10)]
    assert [spec.text(p) for p in first] == [spec.text(generate.program(3, i)) for i in range(10)]
    assert len({spec.text(p) for p in first}) == 10
    assert spec.text(generate.program(4, 0)) != spec.text(first[0])
    a = values.arguments(first[0].params, 3, 0)
    b = values.arguments(first[0].params, 3, 0)
    assert [x.tobytes() for x in a] == [x.tobytes() for x in b]


def test_the_generator_reaches_every_op_and_the_fusion_boundaries():
    programs = [generate.program(11, i) for i in range(300)]
    seen = {name for p in programs for name in p.op_names()}
    assert set(spec.RECIPES) - seen == set()
    widened_products = donated = loop_bodies = 0
    for p in programs:
        types = spec.value_types(p)
        producer = {}
        at = len(p.params)
        for n in p.nodes:
            producer[at] = n
            at += n.count
        for n in p.nodes:
            if n.op == "dot_general" and any(
                producer.get(a) is not None and producer[a].op == "convert" for a in n.args
            ):
                widened_products += any(types[a].dtype == "f32" for a in n.args)
        donated += bool(p.donated)
        loop_bodies += sum(isinstance(n.attr("body"), Program) for n in p.nodes)
    assert widened_products > 50 and donated > 20 and loop_bodies > 20


def test_index_parameters_hold_mostly_valid_indices():
    t = Tensor("i32", (1000,), "index", 7)
    got = values.array(np.random.default_rng(0), t, "normal")
    assert got.dtype == np.int32 and got.min() >= -1 and got.max() <= 8
    assert np.mean((got >= 0) & (got < 7)) > 0.9


# ---------------------------------------------------------------------------------------
# Tolerances
# ---------------------------------------------------------------------------------------


def _module(text: str):
    return accy.parse(text)


def test_a_cancelling_product_gets_a_tolerance_of_its_terms_magnitude():
    """sum(x * y) with terms of 1e4 that cancel to about 1: the noisy runs move it by
    about sqrt(K) ulps of 1e4, far more than an ulp of the result."""
    module = _module(
        """func.func @f(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<f32> {
  %0 = accy.dot_general %x, %y, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<64xf32>, tensor<64xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}"""
    )
    x = np.where(np.arange(64) % 2 == 0, 1e4, -1e4).astype(np.float32)
    y = np.ones(64, np.float32) + np.float32(1e-3) * (np.arange(64) == 0)
    (exact,) = accy.reference.run(module, "f", x, y)
    trials = compare.noisy_runs(module, "f", [x, y], 3)
    spread = max(abs(float(t[0]) - float(exact)) for t in trials)
    assert 1e-2 < spread < 2  # an ulp of 1e4 is 1e-3; sqrt(64) + 1 ulps of 64e4 is 0.7
    assert compare.problems(exact + np.float32(spread), exact, [t[0] for t in trials]) is None
    assert compare.problems(exact + np.float32(10), exact, [t[0] for t in trials]) is not None


def test_problems_checks_classes_integers_and_booleans():
    e = np.array([1.0, np.nan, np.inf, 2.0], np.float32)
    assert compare.problems(e.copy(), e, [e]) is None
    assert "got np.float32(5.0)" in compare.problems(np.array([1, np.nan, np.inf, 5], np.float32),
                                                      e, [e])  # fmt: skip
    assert compare.problems(np.array([1, 0, np.inf, 2], np.float32), e, [e]) is not None
    i = np.array([3, 4], np.int32)
    assert compare.problems(np.array([3, 5], np.int32), i, [i]) is not None
    moved = np.array([3, 5], np.int32)  # an element some noisy run moved by 1
    assert compare.problems(np.array([3, 7], np.int32), i, [moved]) is None
    b = np.array([True, False])
    assert compare.problems(np.array([True, True]), b, [b]) is not None
    assert compare.problems(np.array([True, True]), b, [np.array([True, True])]) is None


def test_a_compare_that_flips_in_a_noisy_run_is_not_compared():
    """exp(x) > 1 for x = 0: the jittered exp flips the compare in some runs."""
    module = _module(
        """func.func @f(%x: tensor<64xf32>, %one: tensor<64xf32>) -> tensor<64xi1> {
  %0 = accy.exponential %x : tensor<64xf32>
  %1 = accy.compare GT, %0, %one : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xi1>
  func.return %1 : tensor<64xi1>
}"""
    )
    x, one = np.zeros(64, np.float32), np.ones(64, np.float32)
    (exact,) = accy.reference.run(module, "f", x, one)
    trials = [t[0] for t in compare.noisy_runs(module, "f", [x, one], 3)]
    flipped = np.any([t != exact for t in trials], axis=0)
    assert 0 < np.count_nonzero(flipped) < 64
    assert compare.problems(exact ^ flipped, exact, trials) is None
    assert compare.problems(~exact, exact, trials) is not None


# ---------------------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------------------

SMALL = Program(
    params=(Tensor("f32", (4,)), Tensor("f32", (4,))),
    nodes=(node("add", (0, 1)), node("tanh", (2,))),
    results=(3,),
)


def _outcome(monkeypatch, compile_) -> Outcome:
    monkeypatch.setattr(accy, "compile", compile_)
    arguments = (np.ones(4, np.float32), np.arange(4, dtype=np.float32))
    return check.run_case(check.Case("c", 0, 0, SMALL, arguments), {}, lambda stage: None)


class _Returns:
    def __init__(self, function):
        self.function = function

    def __getitem__(self, name):
        return self.function


def test_outcomes_are_classified(monkeypatch):
    right = accy.compile
    assert check.run_case(check.Case("c", 0, 0, SMALL), {}, lambda s: None).kind == "PASS"

    def wrong(module, **options):
        good = right(module, **options)
        return _Returns(lambda *a: tuple(r + 1 for r in good["f"](*a)))

    def writes(module, **options):
        def call(x, y):
            x[0] = 7
            return accy.reference.run(module, "f", x, y)

        return _Returns(call)

    def raising(error):
        def compile_(module, **options):
            raise error

        return compile_

    assert _outcome(monkeypatch, wrong).kind == "WRONG"
    assert "wrote argument #0" in _outcome(monkeypatch, writes).detail
    assert _outcome(monkeypatch, raising(accy.AccyError("internal: lost"))).kind == "INTERNAL"
    refused = _outcome(monkeypatch, raising(accy.AccyError("accy lowers no such op")))
    assert (refused.kind, refused.stage) == ("REFUSED", "compile cpu")
    broken = _outcome(monkeypatch, raising(KeyError("x")))
    assert broken.kind == "INTERNAL" and broken.detail.startswith("KeyError")


def test_signatures_blank_what_changes_while_shrinking():
    a = Outcome("a", "INTERNAL", "f.mlir:3:4: error: internal: kernel 7 reads %12 of "
                "tensor<8x3xbf16> from no buffer", "compile cpu")  # fmt: skip
    b = Outcome("b", "INTERNAL", "error: internal: kernel 1 reads %2 of tensor<2xf16> from "
                "no buffer", "compile cpu")  # fmt: skip
    assert check.signature(a) == check.signature(b)
    w1 = Outcome("c", "WRONG", "result #3: 1 of 9 elements differ", "compare")
    w2 = Outcome("d", "WRONG", "result #0: 5 of 5 elements differ", "compare")
    assert check.signature(w1) == check.signature(w2) != check.signature(a)


# ---------------------------------------------------------------------------------------
# The shrinker
# ---------------------------------------------------------------------------------------


def test_the_shrinker_reduces_a_planted_failure_to_its_ops():
    """'Fails' while a product feeds a tanh: the shrinker keeps those two ops (and what
    types them) and drops the rest, the parameters' sizes included."""

    def bad(program: Program) -> bool:
        types = spec.value_types(program)
        at, made = len(program.params), {}
        for n in program.nodes:
            made[at] = n
            at += n.count
        return any(
            n.op == "tanh" and made.get(n.args[0]) is not None and made[n.args[0]].op ==
            "dot_general" and types[n.args[0]].dtype == "f32"
            for n in program.nodes
        )  # fmt: skip

    for index in range(400):
        program = generate.program(5, index)
        if bad(program) and len(program.nodes) > 8:
            break
    else:
        pytest.fail("no generated program with a product feeding a tanh")
    arguments = values.arguments(program.params, 5, index)
    small, small_arguments = shrink.shrink(
        program, arguments, lambda batch: [bad(p) for p, _ in batch]
    )
    assert bad(small) and len(small.nodes) <= 4 < len(program.nodes)
    assert sum(p.size for p in small.params) < sum(p.size for p in program.params)
    assert [a.shape for a in small_arguments] == [p.shape for p in small.params]
    accy.reference.run(spec.build(small), "f", *small_arguments)


def test_a_cut_node_becomes_a_parameter_holding_its_value():
    """Replacing `add` by a parameter feeds the tanh the same numbers."""
    x, y = np.float32([0.5, 1, 2, 3]), np.float32([1, 1, 1, 1])
    computed = shrink.all_values(SMALL, [x, y])
    cut = list(shrink.cut_nodes(SMALL, [x, y], computed))
    program, arguments = cut[0]
    assert [n.op for n in program.nodes] == ["tanh"]
    np.testing.assert_array_equal(arguments[0], x + y)
    before = accy.reference.run(spec.build(SMALL), "f", x, y)
    after = accy.reference.run(spec.build(program), "f", *arguments)
    np.testing.assert_array_equal(before[0], after[0])


# ---------------------------------------------------------------------------------------
# JAX mode
# ---------------------------------------------------------------------------------------


def test_jax_programs_print_runnable_source_and_pass_on_a_sample():
    pytest.importorskip("jax")
    from program_fuzz import jax_mode

    program = jax_mode.program(0, 1)
    assert program == jax_mode.program(0, 1)
    namespace: dict = {}
    exec(program.source(), namespace)  # noqa: S102 - the fuzzer's own text
    assert callable(namespace["f"])
    plain = jax_mode.JaxProgram(
        params=(Tensor("f32", (3, 4)), Tensor("f32", (4, 2))),
        lines=(("v0", "jnp.tanh(a0) @ a1", "matmul"), ("v1", "jnp.sum(v0, axis=1)", "reduce")),
        results=("v0", "v1"),
    )
    outcome = jax_mode.run_case(jax_mode.JaxCase("j", 0, 0, plain), {}, lambda s: None)
    assert outcome.kind == "PASS", outcome.detail


def test_jax_disagreements_go_to_the_interpreter(monkeypatch):
    """XLA's result moved: accy agrees with the interpreter (XLA_DIFFERS); accy's moved
    instead: WRONG (XLA agrees with accy's own reference)."""
    pytest.importorskip("jax")
    from program_fuzz import jax_mode

    plain = jax_mode.JaxProgram(
        params=(Tensor("f32", (5,)),), lines=(("v0", "jnp.exp(a0) * 2.0", "unary"),),
        results=("v0",),
    )  # fmt: skip
    lower = jax_mode.lower

    def xla_moved(program, arguments):
        text, outputs = lower(program, arguments)
        return text, [o + 1 for o in outputs]

    monkeypatch.setattr(jax_mode, "lower", xla_moved)
    outcome = jax_mode.run_case(jax_mode.JaxCase("j", 0, 0, plain), {}, lambda s: None)
    assert outcome.kind == "XLA_DIFFERS", outcome.detail
    monkeypatch.setattr(jax_mode, "lower", lower)
    right = accy.compile

    def accy_moved(module, **options):
        good = right(module, **options)
        return _Returns(lambda *a: tuple(r + 1 for r in good["main"](*a)))

    monkeypatch.setattr(accy, "compile", accy_moved)
    outcome = jax_mode.run_case(jax_mode.JaxCase("j", 0, 0, plain), {}, lambda s: None)
    assert outcome.kind == "WRONG" and "accy's reference" in outcome.detail, outcome.detail


CUMSUM_OVERFLOW = """module @jit_f {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[2, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 3>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}"""


def test_a_sum_the_f32_chain_overflows_is_judged_by_its_exact_value():
    # The f32 chain (the interpreter's, XLA's) gives 3e38, inf, inf: inf - 3e38 is inf. In
    # f64 the last prefix is 3e38 again, which accy's scan (f64, rounded once) gives: the
    # exact value decides, EXACT, not WRONG. Without a sum there is no such excuse.
    from program_fuzz import jax_mode

    x = np.float32([3e38, 3e38, -3e38])
    actual = [np.float32([3e38, np.inf, 3e38])]
    (exact,) = jax_mode.exact_results(CUMSUM_OVERFLOW, [x], actual)
    np.testing.assert_array_equal(exact, actual[0])
    assert (
        jax_mode.exact_results(CUMSUM_OVERFLOW.replace("reduce_window", "map"), [x], actual) is None
    )


def test_an_interpreter_off_where_accy_and_xla_agree_judges_nothing_in_that_result():
    # An argsort of bf16 zeros, a subnormal and NaNs (seed 11, program 1793): accy and its
    # reference order the subnormal before zero, XLA reads it as zero; the interpreter's
    # sort is off both elsewhere and matched XLA at one element by chance: UNDECIDED, not
    # WRONG. Where it agrees with one of them everywhere else, it still decides.
    from program_fuzz import jax_mode

    accy_result = [np.float32([1, 2, 3, 4])]
    xla = [np.float32([1, 2, 4, 3])]
    scrambled = [np.float32([9, 8, 4, 7])]
    kind, detail = jax_mode.judge(accy_result, xla, scrambled, [accy_result], accy_result)
    assert kind == "UNDECIDED" and "off where accy and XLA agree" in detail, detail
    assert jax_mode.judge(accy_result, xla, xla, [accy_result], accy_result)[0] == "WRONG"
    assert jax_mode.judge(accy_result, xla, accy_result, [accy_result], accy_result)[0] == (
        "XLA_DIFFERS"
    )
