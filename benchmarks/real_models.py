"""Real-size models from public libraries on accy's CPU target against XLA, side by side.

    python benchmarks/real_models.py [--models bert,gpt2,...] [--rounds 5] [--markdown]

Each model is a transformers 4.57 Flax model (the last release with Flax models) built
from its published base configuration with random initialisation (`BertConfig()` is
bert-base-uncased, `GPT2Config()` gpt2 (124M) at seq 128 and 512 and one decode step with
its key/value cache, `ViTConfig()` vit-base-patch16-224, `ResNetConfig()` resnet-50 in eval
mode, whisper-tiny's encoder), or flax's MNIST example CNN's training step with optax's
adamw; its function `jax.jit`-ed with the parameters as arguments and lowered to StableHLO;
accy and XLA compile that very text and run it on the same arrays, timed in interleaved
rounds (`gemm.interleaved_times`), every accy output checked against XLA's first. With
IREE installed (`pip install iree-base-compiler iree-base-runtime`; `--no-iree` leaves it
out), IREE runs the same text too (`llvm-cpu` for this host, the `local-task` driver),
where it compiles and agrees with XLA. Also printed: each compiler's compile time (accy's
includes import).
Ratios above 1: accy faster.

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
from library_plans import classifier_step
from models import iree_runner, xla_runner
from timing import print_table

MODELS = (
    "bert",
    "gpt2",
    "gpt2-512",
    "gpt2-decode",
    "vit",
    "resnet50",
    "whisper-encoder",
    "flax-cnn-train",
)


def build(name: str):
    """`(StableHLO text, arguments)` of the model `name`'s forward pass at its real size."""
    import jax
    import numpy as np
    import transformers as tf

    rng = np.random.default_rng(0)
    if name == "gpt2-decode":
        return gpt2_decode_step(rng)
    if name == "flax-cnn-train":
        return flax_cnn_training_step(rng)
    method, variables = None, {}
    if name == "bert":
        model = tf.FlaxBertModel(tf.BertConfig(), seed=0)
        ids = rng.integers(0, 30522, (1, 128), dtype=np.int32)
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    elif name in ("gpt2", "gpt2-512"):
        model = tf.FlaxGPT2Model(tf.GPT2Config(), seed=0)
        length = 512 if name == "gpt2-512" else 128
        ids = rng.integers(0, 50257, (1, length), dtype=np.int32)
        positions = np.arange(length, dtype=np.int32)[None]
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": positions}
    elif name == "resnet50":  # eval mode: batch norm from its running statistics
        model = tf.FlaxResNetModel(tf.ResNetConfig(), seed=0)
        inputs = {"pixel_values": rng.standard_normal((1, 224, 224, 3), dtype=np.float32)}
        variables = {"batch_stats": model.params["batch_stats"]}
        model_params = model.params["params"]
    elif name == "whisper-encoder":  # whisper-tiny's encoder on 30 s of log-mel frames
        config = tf.WhisperConfig(
            d_model=384,
            encoder_layers=4,
            encoder_attention_heads=6,
            encoder_ffn_dim=1536,
            decoder_layers=4,
            decoder_attention_heads=6,
            decoder_ffn_dim=1536,
            num_mel_bins=80,
        )
        model = tf.FlaxWhisperModel(config, seed=0)
        inputs = {"input_features": rng.standard_normal((1, 80, 3000), dtype=np.float32)}

        def method(module, **kwargs):
            return module._get_encoder_module()(**kwargs)

    elif name == "vit":
        model = tf.FlaxViTModel(tf.ViTConfig(), seed=0)
        inputs = {"pixel_values": rng.standard_normal((1, 224, 224, 3), dtype=np.float32)}
    else:
        raise SystemExit(f"error: unknown model {name!r}")
    if not variables:
        model_params = model.params
    leaves, tree = jax.tree_util.tree_flatten(model_params)
    keywords = {"deterministic": True}  # batch norm from its running statistics
    if method is not None:
        keywords["method"] = method

    def forward(leaves, **inputs):
        params = jax.tree_util.tree_unflatten(tree, leaves)
        return model.module.apply({"params": params, **variables}, **inputs, **keywords)[0]

    names = sorted(inputs)
    function = jax.jit(
        lambda leaves, *xs: forward(leaves, **dict(zip(names, xs))), keep_unused=True
    )
    args = [np.asarray(leaf) for leaf in leaves] + [inputs[n] for n in names]
    text = function.lower(leaves, *[inputs[n] for n in names]).as_text()
    return text, args


def flax_cnn_training_step(rng):
    """`(StableHLO text, arguments)` of one training step of flax's MNIST example CNN
    (two 3x3 convolutions of 32 and 64 features with average pooling, dense 256 and 10)
    on a batch of 128 28x28 images: `jax.value_and_grad` of the cross-entropy and an
    `optax.adamw` update, returning the new parameters, optimizer state and the loss."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            for features in (32, 64):
                x = nn.relu(nn.Conv(features, (3, 3))(x))
                x = nn.avg_pool(x, (2, 2), (2, 2))
            x = nn.relu(nn.Dense(256)(x.reshape(x.shape[0], -1)))
            return nn.Dense(10)(x)

    model = CNN()
    images = rng.standard_normal((128, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, (128,), dtype=np.int32)
    params = model.init(jax.random.PRNGKey(0), images[:1])["params"]
    optimizer = optax.adamw(1e-3)
    state = optimizer.init(params)

    step = classifier_step(model.apply, optimizer)
    args = (params, state, jnp.asarray(images), jnp.asarray(labels))
    text = jax.jit(step).lower(*args).as_text()
    return text, [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]


def gpt2_decode_step(rng):
    """`(StableHLO text, arguments)` of one GPT-2 (124M) decode step: one token at position
    128 against a key/value cache of 256 positions (128 filled), returning the hidden
    state and the updated cache."""
    import jax
    import numpy as np
    import transformers as tf

    model = tf.FlaxGPT2Model(tf.GPT2Config(), seed=0)
    length, filled = 256, 128
    cache = jax.tree_util.tree_map(np.asarray, model.init_cache(1, length))
    cache = jax.tree_util.tree_map(
        lambda a: (
            np.full(a.shape, filled, a.dtype)
            if a.ndim == 0
            else rng.standard_normal(a.shape).astype(a.dtype)
        ),
        cache,
    )
    params, tree = jax.tree_util.tree_flatten(model.params)
    cached, cache_tree = jax.tree_util.tree_flatten(cache)
    ids = rng.integers(0, 50257, (1, 1), dtype=np.int32)
    mask = (np.arange(length) <= filled).astype(np.int32)[None]
    position = np.array([[filled]], dtype=np.int32)

    def step(params, cached, ids, mask, position):
        variables = {
            "params": jax.tree_util.tree_unflatten(tree, params),
            "cache": jax.tree_util.tree_unflatten(cache_tree, cached),
        }
        out, updated = model.module.apply(
            variables, ids, mask, position, deterministic=True, mutable=["cache"]
        )
        return out[0], jax.tree_util.tree_leaves(updated["cache"])

    args = (params, cached, ids, mask, position)
    text = jax.jit(step, keep_unused=True).lower(*args).as_text()
    flat = [np.asarray(a) for a in params] + [np.asarray(a) for a in cached]
    return text, [*flat, ids, mask, position]


def measure(name: str, rounds: int, with_iree: bool) -> dict:
    import numpy as np

    import accy

    text, args = build(name)
    start = time.perf_counter()
    xla = xla_runner(text, args)
    xla_compile = time.perf_counter() - start
    start = time.perf_counter()
    exe = accy.compile(accy.import_stablehlo(text))
    accy_compile = time.perf_counter() - start
    wants = [np.asarray(w, dtype=np.float32) for w in xla[0]()]
    gots = [np.asarray(g, dtype=np.float32) for g in exe(*args)]
    error = max(float(np.max(np.abs(g - w), initial=0.0)) for g, w in zip(gots, wants))
    facts = {"error": error, "accy compile": accy_compile, "xla compile": xla_compile}
    if len(gots) != len(wants) or not all(
        np.allclose(g, w, rtol=1e-3, atol=1e-3) for g, w in zip(gots, wants)
    ):
        facts["wrong"] = True
        return facts
    calls = {"accy": lambda: exe(*args), "xla": xla[0]}
    iree = iree_runner(text, args) if with_iree else None
    if isinstance(iree, str):
        facts["iree"] = "refused"
    elif iree is not None:
        facts["iree compile"] = iree[2]
        outputs = [np.asarray(o, dtype=np.float32) for o in iree[1]()]
        if all(np.allclose(o, w, rtol=1e-3, atol=1e-3) for o, w in zip(outputs, wants)):
            calls["iree"] = iree[0]
        else:
            facts["iree"] = "wrong"
    facts.update(interleaved_times(calls, rounds))
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-iree", action="store_true", help="leave IREE out")
    args = parser.parse_args(argv)
    header = [
        "model",
        "accy ms",
        "xla ms",
        "iree ms",
        "xla/accy",
        "iree/accy",
        "compile s: accy",
        "xla",
        "iree",
        "max error",
    ]
    rows = []
    for name in args.models.split(","):
        f = measure(name, args.rounds, not args.no_iree)
        if f.get("wrong"):
            rows.append(
                [
                    name,
                    "wrong",
                    "",
                    "",
                    "",
                    "",
                    f"{f['accy compile']:.1f}",
                    "",
                    "",
                    f"{f['error']:.3g}",
                ]
            )
            continue
        iree = f"{f['iree'] * 1e3:.2f}" if isinstance(f.get("iree"), float) else f.get("iree", "")
        rows.append(
            [
                name,
                f"{f['accy'] * 1e3:.2f}",
                f"{f['xla'] * 1e3:.2f}",
                iree,
                f"{f['xla'] / f['accy']:.2f}",
                f"{f['iree'] / f['accy']:.2f}" if isinstance(f.get("iree"), float) else "",
                f"{f['accy compile']:.1f}",
                f"{f['xla compile']:.1f}",
                f"{f['iree compile']:.1f}" if "iree compile" in f else "",
                f"{f['error']:.3g}",
            ]
        )
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    print_table(header, rows, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
