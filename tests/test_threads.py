"""Thread safety and reentrancy: one compiled function called from several threads at once
(its arena is allocated per call, the packed arguments are per thread, the parallel loops
share one pool), and compiles running in parallel threads (each in its own MLIR context)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

import accy

PROGRAM = """func.func @f(%x: tensor<64x4096xf32>, %y: tensor<64x4096xf32>) -> (tensor<64xf32>, tensor<64x4096xf32>) {
  %0 = accy.multiply %x, %y : tensor<64x4096xf32>
  %1 = accy.tanh %0 : tensor<64x4096xf32>
  %2 = accy.reduce add %1, dims = [1] : (tensor<64x4096xf32>) -> tensor<64xf32>
  func.return %2, %1 : tensor<64xf32>, tensor<64x4096xf32>
}
"""


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((64, 4096), dtype=np.float32),
        rng.standard_normal((64, 4096), dtype=np.float32),
    )


def test_one_function_called_from_many_threads_at_once() -> None:
    module = accy.parse(PROGRAM)
    exe = accy.compile(module, target="cpu", threads=2)
    cases = [inputs(seed) for seed in range(16)]
    expected = [accy.reference.run(module, "f", *case) for case in cases]
    serial = [exe["f"](*case) for case in cases]

    def call(index: int) -> tuple[int, tuple[np.ndarray, ...]]:
        results = None
        for _ in range(5):
            results = exe["f"](*cases[index])
        return index, results

    with ThreadPoolExecutor(max_workers=8) as pool:
        for index, results in pool.map(call, [i % 16 for i in range(48)]):
            for got, alone in zip(results, serial[index]):
                np.testing.assert_array_equal(got, alone)
            for got, want in zip(results, expected[index]):
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_compiles_in_parallel_threads_do_not_interfere() -> None:
    texts = [
        PROGRAM.replace("accy.tanh", op).replace("@f", f"@f{n}")
        for n, op in enumerate(["accy.tanh", "accy.negate", "accy.exponential", "accy.abs"] * 2)
    ]
    x, y = inputs(7)
    x = x * np.float32(0.01)

    def compile_and_run(text: str) -> tuple[str, tuple[np.ndarray, ...], list[np.ndarray]]:
        module = accy.parse(text)
        exe = accy.compile(module, target="cpu", threads=1)
        (name,) = exe.function_names
        return text, exe[name](x, y), accy.reference.run(module, name, x, y)

    with ThreadPoolExecutor(max_workers=4) as pool:
        for _text, results, expected in pool.map(compile_and_run, texts):
            for got, want in zip(results, expected):
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_export_called_from_many_threads(tmp_path) -> None:
    module = accy.parse(PROGRAM)
    loaded = accy.runtime.load(accy.export(module, tmp_path / "out", target="cpu", threads=2))
    cases = [inputs(seed) for seed in range(8)]
    expected = [accy.reference.run(module, "f", *case) for case in cases]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for index, results in enumerate(pool.map(lambda case: loaded.f(*case), cases * 3)):
            for got, want in zip(results, expected[index % 8]):
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    loaded.close()
