"""Real-size models from public libraries on accy's CPU target against XLA, side by side.

    python benchmarks/real_models.py [--models bert,gpt2,vit] [--rounds 5] [--markdown]

Each model is a transformers 4.57 Flax model (the last release with Flax models) built
from its published base configuration with random initialisation (`BertConfig()` is
bert-base-uncased, `GPT2Config()` gpt2 (124M), `ViTConfig()` vit-base-patch16-224), its
forward pass `jax.jit`-ed with the parameters as arguments and lowered to StableHLO; accy
and XLA compile that very text and run it on the same arrays, timed in interleaved rounds
(`gemm.interleaved_times`), accy's outputs checked against XLA's first. Also printed: accy's
compile time (import and compile) against XLA's. Ratios above 1: accy faster.

Needs JAX, flax and transformers 4.57 (`pip install "transformers==4.57.*" flax`), none of
which the tests need.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse
import sys
import time

from gemm import interleaved_times
from models import xla_runner
from timing import print_table


def build(name: str):
    """`(StableHLO text, arguments)` of the model `name`'s forward pass at its real size."""
    import jax
    import numpy as np
    import transformers as tf

    rng = np.random.default_rng(0)
    if name == "bert":
        model = tf.FlaxBertModel(tf.BertConfig(), seed=0)
        ids = rng.integers(0, 30522, (1, 128), dtype=np.int32)
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    elif name == "gpt2":
        model = tf.FlaxGPT2Model(tf.GPT2Config(), seed=0)
        ids = rng.integers(0, 50257, (1, 128), dtype=np.int32)
        positions = np.arange(128, dtype=np.int32)[None]
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": positions}
    elif name == "vit":
        model = tf.FlaxViTModel(tf.ViTConfig(), seed=0)
        inputs = {"pixel_values": rng.standard_normal((1, 224, 224, 3), dtype=np.float32)}
    else:
        raise SystemExit(f"error: unknown model {name!r}")
    leaves, tree = jax.tree_util.tree_flatten(model.params)

    def forward(leaves, **inputs):
        params = jax.tree_util.tree_unflatten(tree, leaves)
        return model.module.apply({"params": params}, **inputs, deterministic=True)[0]

    names = sorted(inputs)
    function = jax.jit(
        lambda leaves, *xs: forward(leaves, **dict(zip(names, xs))), keep_unused=True
    )
    args = [np.asarray(leaf) for leaf in leaves] + [inputs[n] for n in names]
    text = function.lower(leaves, *[inputs[n] for n in names]).as_text()
    return text, args


def measure(name: str, rounds: int) -> dict:
    import numpy as np

    import accy

    text, args = build(name)
    start = time.perf_counter()
    xla = xla_runner(text, args)
    xla_compile = time.perf_counter() - start
    start = time.perf_counter()
    exe = accy.compile(accy.import_stablehlo(text))
    accy_compile = time.perf_counter() - start
    want = np.asarray(xla[0]()[0], dtype=np.float32)
    got = np.asarray(exe(*args)[0], dtype=np.float32)
    error = float(np.max(np.abs(got - want)))
    facts = {"error": error, "accy compile": accy_compile, "xla compile": xla_compile}
    if not np.allclose(got, want, rtol=1e-3, atol=1e-3):
        facts["wrong"] = True
        return facts
    facts.update(interleaved_times({"accy": lambda: exe(*args), "xla": xla[0]}, rounds))
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="bert,gpt2,vit")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    header = [
        "model",
        "accy ms",
        "xla ms",
        "xla/accy",
        "accy compile s",
        "xla compile s",
        "max error",
    ]
    rows = []
    for name in args.models.split(","):
        f = measure(name, args.rounds)
        if f.get("wrong"):
            rows.append(
                [name, "wrong", "", "", f"{f['accy compile']:.1f}", "", f"{f['error']:.3g}"]
            )
            continue
        rows.append(
            [
                name,
                f"{f['accy'] * 1e3:.2f}",
                f"{f['xla'] * 1e3:.2f}",
                f"{f['xla'] / f['accy']:.2f}",
                f"{f['accy compile']:.1f}",
                f"{f['xla compile']:.1f}",
                f"{f['error']:.3g}",
            ]
        )
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    print_table(header, rows, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
