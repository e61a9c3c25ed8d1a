"""Memory plans of programs that libraries write: accy's planned temporaries against XLA's.

    python benchmarks/library_plans.py [--programs adam_mlp,...] [--markdown]

Each program is built from a public library as its users call it, with random
initialisation, at sizes that run in well under a second: optax optimizer steps
(`jax.value_and_grad` of a flax.linen model, then `opt.update` and `apply_updates`, the
parameters and optimizer state donated, as training loops do), flax.linen layers
(train-mode BatchNorm with its statistics updated, an LSTM over `nn.RNN`, attention), the
transformers 4.57 Flax models at small configs (BERT, GPT-2 forward and one decode step
with its KV cache, Llama, ViT, CLIP, Whisper, ResNet; T5's Flax code calls a
`jnp.clip(a_max=...)` that JAX no longer has), and a `jax.scipy.optimize.minimize` (BFGS,
a data-dependent `while_loop`). Per program: accy's planned temporaries
(`arena.temporaries_size` of `accy.prepare`) against XLA's `temp_size_in_bytes` for the
same StableHLO text compiled for the CPU and IREE's transient memory (`llvm-cpu`, where
IREE is installed; `iree_transient_bytes`), accy's arena over its lower bound, both footprints (arguments + outputs not aliased to
an argument + temporaries: XLA reuses donated arguments' buffers for results; accy's CPU
target does so where the program is compiled with `donate=True`, "donating", and else
writes fresh results, which then hold temporaries), the median of `--repeat` calls of each (XLA's with
fresh copies of donated arguments, timed with it), and whether accy's outputs equal JAX's (rtol 1e-4, atol 1e-5; for optimizer steps atol is the
learning rate: adaptive optimizers normalise each gradient, so an element whose gradient
is at rounding level steps by up to the learning rate either way in any implementation;
see `ATOL`).
Needs JAX, flax, optax and transformers 4.57 (none are test requirements).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from models import iree_transient_bytes
from timing import geomean, median_time, print_table


def classifier_step(apply, optimizer):
    """`step(params, state, x, labels) -> (params, state, loss)`: one optax step of a
    flax classifier's softmax cross-entropy, as training loops write it."""
    import jax
    import optax

    def step(params, state, x, labels):
        def loss(p):
            logits = apply({"params": p}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        value, grads = jax.value_and_grad(loss)(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    return step


def _mlp_step(make_optimizer):
    import flax.linen as nn
    import jax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in (512, 512):
                x = nn.relu(nn.Dense(width)(x))
            return nn.Dense(10)(x)

    model = MLP()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 256)).astype(np.float32)
    y = rng.integers(0, 10, 128).astype(np.int32)
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    optimizer = make_optimizer()
    state = optimizer.init(params)

    return classifier_step(model.apply, optimizer), (params, state, x, y), (0, 1)


def _cnn_batchnorm_step():
    import flax.linen as nn
    import jax
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool):
            for features in (32, 64):
                x = nn.Conv(features, (3, 3), use_bias=False)(x)  # BatchNorm has the bias
                x = nn.BatchNorm(use_running_average=not train)(x)
                x = nn.relu(x)
                x = nn.avg_pool(x, (2, 2), (2, 2))
            return nn.Dense(10)(x.reshape(x.shape[0], -1))

    model = CNN()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32, 32, 3)).astype(np.float32)
    y = rng.integers(0, 10, 16).astype(np.int32)
    variables = model.init(jax.random.PRNGKey(0), x, train=False)
    params, stats = variables["params"], variables["batch_stats"]
    optimizer = optax.adamw(1e-3)
    state = optimizer.init(params)

    def step(params, stats, state, x, y):
        def loss(p):
            logits, updated = model.apply(
                {"params": p, "batch_stats": stats}, x, train=True, mutable=["batch_stats"]
            )
            value = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return value, updated["batch_stats"]

        (value, stats), grads = jax.value_and_grad(loss, has_aux=True)(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), stats, state, value

    return step, (params, stats, state, x, y), (0, 1, 2)


def _lstm():
    import flax.linen as nn
    import jax

    model = nn.RNN(nn.OptimizedLSTMCell(256))
    x = np.random.default_rng(0).standard_normal((8, 64, 128)).astype(np.float32)
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    return (lambda params, x: model.apply({"params": params}, x)), (params, x), ()


def _attention():
    import flax.linen as nn
    import jax

    model = nn.MultiHeadDotProductAttention(num_heads=8, qkv_features=256)
    x = np.random.default_rng(0).standard_normal((4, 128, 256)).astype(np.float32)
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    return (lambda params, x: model.apply({"params": params}, x)), (params, x), ()


def _with_positions(model, ids: np.ndarray, mask: np.ndarray):
    """A decoder's forward pass taking token ids, mask and positions (GPT-2, Llama)."""
    positions = np.broadcast_to(np.arange(ids.shape[1], dtype=np.int32), ids.shape).copy()

    def forward(params, ids, mask, positions):
        return model.module.apply({"params": params}, ids, mask, positions, deterministic=True)[0]

    return forward, (model.params, ids, mask, positions), ()


def _transformers(name: str):
    import transformers as tf

    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1000, (2, 64), dtype=np.int32)
    mask = np.ones_like(ids)
    small = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4}
    if name == "gpt2":
        config = tf.GPT2Config(n_embd=256, n_layer=2, n_head=4, vocab_size=1000)
        return _with_positions(tf.FlaxGPT2Model(config, seed=0), ids, mask)
    if name == "bert":
        config = tf.BertConfig(intermediate_size=1024, vocab_size=1000, **small)
        model = tf.FlaxBertModel(config, seed=0)
        return (
            lambda p, i, m: model.module.apply({"params": p}, i, m, deterministic=True)[0],
            (model.params, ids, mask),
            (),
        )
    if name == "llama":
        config = tf.LlamaConfig(
            intermediate_size=512, vocab_size=1000, num_key_value_heads=2, **small
        )
        return _with_positions(tf.FlaxLlamaModel(config, seed=0), ids, mask)
    if name == "vit":
        config = tf.ViTConfig(intermediate_size=512, image_size=64, patch_size=8, **small)
        model = tf.FlaxViTModel(config, seed=0)
        pixels = rng.standard_normal((2, 64, 64, 3)).astype(np.float32)
        return (
            lambda p, x: model.module.apply({"params": p}, x, deterministic=True)[0],
            (model.params, pixels),
            (),
        )
    if name == "clip":
        text = dict(intermediate_size=512, vocab_size=1000, max_position_embeddings=77, **small)
        vision = dict(intermediate_size=512, image_size=64, patch_size=8, **small)
        config = tf.CLIPConfig(text_config=text, vision_config=vision, projection_dim=128)
        model = tf.FlaxCLIPModel(config, seed=0)
        tokens = rng.integers(0, 1000, (2, 77), dtype=np.int32)
        pixels = rng.standard_normal((2, 3, 64, 64)).astype(np.float32)
        return (
            lambda p, i, x, m: model(i, x, attention_mask=m, params=p)[0],
            (model.params, tokens, pixels, np.ones_like(tokens)),
            (),
        )
    if name == "whisper":
        config = tf.WhisperConfig(
            d_model=256,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=512,
            decoder_ffn_dim=512,
            max_source_positions=64,
            max_target_positions=64,
            vocab_size=1000,
        )
        model = tf.FlaxWhisperModel(config, seed=0)
        features = rng.standard_normal((2, 80, 128)).astype(np.float32)
        decoder_ids = rng.integers(0, 1000, (2, 16), dtype=np.int32)
        return (
            lambda p, f, d: model(f, decoder_input_ids=d, params=p)[0],
            (model.params, features, decoder_ids),
            (),
        )
    if name == "resnet":
        config = tf.ResNetConfig(
            embedding_size=32, hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1]
        )
        model = tf.FlaxResNetModel(config, seed=0)
        pixels = rng.standard_normal((2, 3, 64, 64)).astype(np.float32)
        return (lambda p, x: model(x, params=p, train=False)[0]), (model.params, pixels), ()
    raise SystemExit(f"error: unknown transformers model {name!r}")


def _gpt2_decode_step():
    """One token of GPT-2's generation loop: its KV cache (128 positions) donated, updated."""
    import transformers as tf

    config = tf.GPT2Config(n_embd=256, n_layer=2, n_head=4, vocab_size=1000)
    model = tf.FlaxGPT2LMHeadModel(config, seed=0)
    cache = model.init_cache(2, 128)
    ids = np.random.default_rng(0).integers(0, 1000, (2, 1), dtype=np.int32)
    mask = np.ones((2, 128), np.int32)
    positions = np.full((2, 1), 5, np.int32)

    def step(params, cache, ids, mask, positions):
        out = model(
            ids, attention_mask=mask, position_ids=positions, params=params, past_key_values=cache
        )
        return out.logits, out.past_key_values

    return step, (model.params, cache, ids, mask, positions), (1,)


def _gpt2_adamw_step():
    import jax
    import jax.numpy as jnp
    import optax
    import transformers as tf

    config = tf.GPT2Config(n_embd=256, n_layer=2, n_head=4, vocab_size=1000)
    model = tf.FlaxGPT2LMHeadModel(config, seed=0)
    ids = np.random.default_rng(0).integers(0, 1000, (2, 64), dtype=np.int32)
    optimizer = optax.adamw(1e-4)
    state = optimizer.init(model.params)

    def step(params, state, ids):
        def loss(p):
            mask = jnp.ones_like(ids)
            positions = jnp.broadcast_to(jnp.arange(ids.shape[1]), ids.shape)
            logits = model.module.apply({"params": p}, ids, mask, positions, deterministic=True)[0]
            labels = ids[:, 1:]
            return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], labels).mean()

        value, grads = jax.value_and_grad(loss)(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    return step, (model.params, state, ids), (0, 1)


def _bfgs():
    import jax.numpy as jnp
    from jax.scipy.optimize import minimize

    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    matrix = a @ a.T / 64 + np.eye(64, dtype=np.float32)
    target = np.ones(64, np.float32)

    def solve(matrix, target):
        def f(x):
            return 0.5 * x @ matrix @ x - target @ x

        return minimize(f, jnp.zeros(64, jnp.float32), method="BFGS").x

    return solve, (matrix, target), ()


def programs() -> dict:
    import optax

    return {
        "adam_mlp": lambda: _mlp_step(lambda: optax.adam(1e-3)),
        "adamw_mlp": lambda: _mlp_step(lambda: optax.adamw(1e-3)),
        "sgd_momentum_clip_mlp": lambda: _mlp_step(
            lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(1e-2, momentum=0.9))
        ),
        "lion_mlp": lambda: _mlp_step(lambda: optax.lion(1e-4)),
        "adafactor_mlp": lambda: _mlp_step(lambda: optax.adafactor(1e-3)),
        "cnn_batchnorm_adamw": _cnn_batchnorm_step,
        "lstm_rnn": _lstm,
        "attention": _attention,
        "gpt2_small": lambda: _transformers("gpt2"),
        "bert_small": lambda: _transformers("bert"),
        "llama_small": lambda: _transformers("llama"),
        "vit_small": lambda: _transformers("vit"),
        "clip_small": lambda: _transformers("clip"),
        "whisper_small": lambda: _transformers("whisper"),
        "resnet_small": lambda: _transformers("resnet"),
        "gpt2_decode_step": _gpt2_decode_step,
        "gpt2_adamw_step": _gpt2_adamw_step,
        "bfgs_while_loop": _bfgs,
    }


ATOL = {
    "adam_mlp": 1e-3,
    "adamw_mlp": 1e-3,
    "lion_mlp": 1e-4,
    "adafactor_mlp": 1e-3,
    "cnn_batchnorm_adamw": 1e-3,
    "gpt2_adamw_step": 1e-4,
    "bfgs_while_loop": 2e-3,
}
"""Absolute tolerances other than 1e-5: an optimizer step's learning rate; BFGS's line
searches in float32 end a few iterations apart (accy, its reference and JAX each within
7e-4 of the exact minimiser)."""


def measure(name: str, build, repeat: int) -> list[str]:
    """One row: temporaries, footprints, arena over its bound, agreement with JAX, times."""
    import jax
    from jax.extend.backend import get_backend

    import accy

    function, args, donate = build()
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(args)]
    lowered = jax.jit(function, donate_argnums=donate, keep_unused=True).lower(*args)
    text = lowered.as_text()
    backend = get_backend("cpu")
    device = backend.devices()[0]
    xla = backend.compile_and_load(text, backend.devices()[:1])
    stats = xla.get_compiled_memory_stats()
    xla_temp = stats.temp_size_in_bytes
    xla_total = (
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        - stats.alias_size_in_bytes
        + stats.temp_size_in_bytes
    )
    want = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(function)(*args))]
    start = time.perf_counter()
    try:
        executable = accy.compile(text)
    except accy.AccyError as error:
        refused = "refused: " + error.diagnostic()[:80]
        return [name, "-", str(xla_temp), "-", "-", "-", "-", "-", "-", refused, "-", "-", "-"]
    seconds = time.perf_counter() - start
    arena = executable.preparation.arena
    outputs = executable["main"](*leaves)
    atol = ATOL.get(name, 1e-5)

    def agree(got) -> bool:
        return all(
            np.allclose(g, w, rtol=1e-4, atol=atol, equal_nan=True)
            for g, w in zip(got, want, strict=True)
        )

    right = agree(outputs)
    temporaries = arena.temporaries_size
    # Footprints: arguments, results that are not a donated argument's array, temporaries.
    arguments = sum(a.nbytes for a in leaves)
    accy_total = arguments + sum(o.nbytes for o in outputs) + temporaries
    donating = "-"
    if donate:  # planned with `donate`: results take the donated arrays over
        donor = accy.compile(text, donate=True)
        given = [np.array(leaf, copy=True) for leaf in leaves]
        results = donor["main"](*given)
        right = right and agree(results)
        fresh = sum(r.nbytes for r in results if not any(r is a for a in given))
        total = arguments + fresh + donor.preparation.arena.temporaries_size
        donating = f"{total / xla_total:.2f}"
    ratio = temporaries / xla_temp if xla_temp else math.inf
    bound = arena.size / arena.lower_bound if arena.lower_bound else 1.0
    iree = iree_transient_bytes(text)
    iree_ratio = "-" if not iree else f"{temporaries / iree:.2f}"
    accy_ms = median_time(lambda: executable["main"](*leaves), repeat) * 1e3
    placed = [jax.device_put(a, device) for a in leaves]

    def xla_call():  # XLA takes donated buffers: fresh copies each call, timed with it
        given = [jax.device_put(a, device) for a in leaves] if donate else placed
        for out in xla.execute(given):
            out.block_until_ready()

    xla_ms = median_time(xla_call, repeat) * 1e3
    return [
        name,
        str(temporaries),
        str(xla_temp),
        "-" if iree is None else str(iree),
        f"{ratio:.2f}",
        iree_ratio,
        f"{accy_total / xla_total:.2f}",
        donating,
        f"{bound:.2f}",
        "correct" if right else "WRONG",
        f"{seconds:.1f}",
        f"{accy_ms:.2f}",
        f"{xla_ms:.2f}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", help="comma-separated names (default: all)")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--repeat", type=int, default=10, help="timed calls per program")
    args = parser.parse_args(argv)
    os.environ["ACCY_CACHE"] = "0"
    import jax

    jax.config.update("jax_platforms", "cpu")
    table = programs()
    names = args.programs.split(",") if args.programs else list(table)
    rows = []
    for name in names:
        rows.append(measure(name, table[name], args.repeat))
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    header = [
        "program",
        "accy temp B",
        "xla temp B",
        "iree transient B",
        "accy/xla",
        "accy/iree",
        "footprint accy/xla",
        "donating",
        "arena/lb",
        "result",
        "compile s",
        "accy ms",
        "xla ms",
    ]
    print_table(header, rows, args.markdown)
    print()
    for column, peer in ((4, "XLA"), (5, "IREE")):  # temporaries
        kept = [float(r[column]) for r in rows if r[column] not in ("-", "inf")]
        below = sum(k <= 1 for k in kept)
        mean = geomean(kept)  # of the positive ratios
        print(
            f"accy/{peer.lower()}: at or below {peer} on {below} of {len(rows)}; geomean "
            f"{0.0 if mean is None else mean:.2f} where accy's is not 0"
        )
    best = [min(float(v) for v in (r[6], r[7]) if v != "-") for r in rows if r[6] != "-"]
    below = sum(b <= 1 for b in best)
    print(
        "footprint (arguments + results not aliased + temporaries) accy/xla, donating where "
        f"the program donates: geomean {geomean(best) or 0:.2f}, at or below XLA on {below} "
        f"of {len(rows)}"
    )
    times = [float(r[12]) / float(r[11]) for r in rows if r[11] != "-"]
    print(f"time xla/accy: geomean {geomean(times) or 0:.2f} (> 1: accy faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
