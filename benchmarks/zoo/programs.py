"""The model zoo: programs written in JAX the way ML engineers write them.

Each entry of `PROGRAMS` is a function and a maker of its example arguments (seeded),
small enough to run well under a second on a CPU. `export.py` lowers each with
`jax.jit(...).lower(...)` to StableHLO and records JAX's outputs and XLA's memory analysis
and CPU time; `benchmarks/models.py` runs the exports through accy. Needs JAX (the `jax`
extra); nothing here is imported by accy or its tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


@dataclass(frozen=True)
class Program:
    function: Callable
    arguments: Callable[[np.random.Generator], tuple]
    about: str
    rtol: float = 1e-4
    atol: float = 1e-5
    donate: tuple[int, ...] = ()


def normal(rng, *shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# ---------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * gamma + beta


def rms_norm(x, weight, eps=1e-6):
    return x * lax.rsqrt((x * x).mean(-1, keepdims=True) + eps) * weight


def attention(q, k, v, mask):
    """q, k, v: [heads, seq, dim]; mask: [seq_q, seq_k] of booleans (True = attend)."""
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    return jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(scores, axis=-1), v)


def split_heads(x, heads):
    seq, width = x.shape
    return x.reshape(seq, heads, width // heads).transpose(1, 0, 2)


def merge_heads(x):
    heads, seq, dim = x.shape
    return x.transpose(1, 0, 2).reshape(seq, heads * dim)


# ---------------------------------------------------------------------------------------
# The programs
# ---------------------------------------------------------------------------------------


def mlp_layernorm(x, w1, b1, w2, b2, gamma, beta):
    h = jax.nn.relu(layer_norm(x, gamma, beta) @ w1 + b1)
    return h @ w2 + b2


def softmax_attention(q, k, v):
    scores = q @ k.T / np.float32(np.sqrt(q.shape[-1]))
    return jax.nn.softmax(scores, axis=-1) @ v


def cnn_block(images, kernel, scale, shift, mean, var):
    """NHWC conv 3x3 -> batch norm (inference) -> ReLU -> 2x2 max pool."""
    y = lax.conv_general_dilated(
        images, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    y = (y - mean) * lax.rsqrt(var + 1e-5) * scale + shift
    y = jax.nn.relu(y)
    return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def depthwise_avgpool(images, kernel):
    """Depthwise 3x3 conv (feature_group_count = channels) and a 2x2 average pool."""
    channels = images.shape[-1]
    y = lax.conv_general_dilated(
        images,
        kernel,
        (1, 1),
        "SAME",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=channels,
    )
    pooled = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return pooled / 4.0


def audio_conv(waveform, w1, w2, b2):
    """A 1-D audio front end (NWC/WIO): a 10-tap stride-5 convolution of the waveform,
    GELU, a 3-tap stride-2 dilated convolution with bias and ReLU."""
    y = lax.conv_general_dilated(
        waveform, w1, (5,), "VALID", dimension_numbers=("NWC", "WIO", "NWC")
    )
    y = jax.nn.gelu(y)
    y = lax.conv_general_dilated(
        y, w2, (2,), "SAME", rhs_dilation=(2,), dimension_numbers=("NWC", "WIO", "NWC")
    )
    return jax.nn.relu(y + b2)


def pool_gradient(images):
    """The gradient of a 2x2 max pool's sum of squares (select_and_scatter)."""

    def loss(x):
        pooled = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.sum(pooled * pooled)

    return jax.grad(loss)(images)


def gpt2_block(tokens, wte, wpe, ln1, w_qkv, w_out, ln2, w_fc, w_proj):
    """Token and position embeddings, then one pre-norm decoder block with a causal mask."""
    seq = tokens.shape[0]
    x = wte[tokens] + wpe[:seq]
    heads = 4
    h = layer_norm(x, ln1[0], ln1[1])
    q, k, v = jnp.split(h @ w_qkv, 3, axis=-1)
    mask = jnp.tril(jnp.ones((seq, seq), bool))
    a = attention(split_heads(q, heads), split_heads(k, heads), split_heads(v, heads), mask)
    x = x + merge_heads(a) @ w_out
    h = layer_norm(x, ln2[0], ln2[1])
    return x + jax.nn.gelu(h @ w_fc, approximate=True) @ w_proj


def rotary(x, positions):
    """Rotary position embedding on [heads, seq, dim] (dim even), pairs (2i, 2i + 1)."""
    dim = x.shape[-1]
    freqs = 1.0 / (10000.0 ** (jnp.arange(0, dim, 2, dtype=jnp.float32) / dim))
    angles = positions[:, None].astype(jnp.float32) * freqs[None, :]
    cos, sin = jnp.cos(angles), jnp.sin(angles)
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = jnp.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)
    return rotated.reshape(x.shape)


def llama_block(x, norm1, wq, wk, wv, wo, norm2, w_gate, w_up, w_down):
    """RMSNorm, rotary embeddings, causal attention and a SwiGLU feed-forward."""
    seq, heads = x.shape[0], 4
    positions = jnp.arange(seq)
    h = rms_norm(x, norm1)
    q = rotary(split_heads(h @ wq, heads), positions)
    k = rotary(split_heads(h @ wk, heads), positions)
    v = split_heads(h @ wv, heads)
    mask = jnp.tril(jnp.ones((seq, seq), bool))
    x = x + merge_heads(attention(q, k, v, mask)) @ wo
    h = rms_norm(x, norm2)
    return x + (jax.nn.silu(h @ w_gate) * (h @ w_up)) @ w_down


def lstm(xs, w_x, w_h, b):
    """An LSTM over a sequence with `lax.scan`: the final hidden state and all outputs."""
    hidden = w_h.shape[0]

    def cell(carry, x):
        h, c = carry
        gates = x @ w_x + h @ w_h + b
        i, f, g, o = jnp.split(gates, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    batch = xs.shape[1]
    zeros = jnp.zeros((batch, hidden), xs.dtype)
    (h, _), outputs = lax.scan(cell, (zeros, zeros), xs)
    return h, outputs


def mlp_loss(params, x, labels):
    w1, b1, w2, b2 = params
    logits = jax.nn.relu(x @ w1 + b1) @ w2 + b2
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(log_probs, labels[:, None], axis=1).mean()


def train_step(w1, b1, w2, b2, x, labels):
    """One SGD step with momentum on a two-layer classifier: `value_and_grad`."""
    params = (w1, b1, w2, b2)
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, labels)
    new = tuple(p - 0.1 * g for p, g in zip(params, grads, strict=True))
    return (loss, *new)


def kv_cache_decode(x, k_cache, v_cache, position, wq, wk, wv, wo):
    """One decode step: project the new token, write it into the caches at `position`
    (`dynamic_update_slice`), attend over the filled prefix."""
    heads = 4
    q = split_heads(x @ wq, heads)  # [heads, 1, dim]
    k_new, v_new = split_heads(x @ wk, heads), split_heads(x @ wv, heads)
    k_cache = lax.dynamic_update_slice(k_cache, k_new, (0, position, 0))
    v_cache = lax.dynamic_update_slice(v_cache, v_new, (0, position, 0))
    mask = (jnp.arange(k_cache.shape[1]) <= position)[None, :]
    out = merge_heads(attention(q, k_cache, v_cache, mask)) @ wo
    return out, k_cache, v_cache


def classifier_head(features, w):
    """Logits, their top 5 and the argmax: what a classifier returns."""
    logits = features @ w
    values, indices = lax.top_k(logits, 5)
    return values, indices, jnp.argmax(logits, axis=-1)


def sort_and_rank(x):
    """Sorted values, the sorting permutation and the median of each row."""
    return jnp.sort(x, axis=-1), jnp.argsort(x, axis=-1), jnp.median(x, axis=-1)


def cumulative(x):
    """Running sum, product and maximum along the last axis (`cumsum` and friends)."""
    return jnp.cumsum(x, axis=-1), jnp.cumprod(1.0 + 0.01 * x, axis=-1), lax.cummax(x, axis=1)


def mixed_precision_matmul(x, w, bias):
    """bf16 operands, f32 accumulation (`preferred_element_type`), an f32 bias and a bf16
    result: how mixed-precision layers are written."""
    y = lax.dot_general(x, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)
    return jax.nn.relu(y + bias).astype(jnp.bfloat16)


def exact_gelu_std(x):
    """GELU with erf (`approximate=False`) and the per-row standard deviation."""
    return jax.nn.gelu(x, approximate=False), x.std(axis=-1)


def segment_mean(values, segment_ids):
    """Per-segment sums and means with `jax.ops.segment_sum` (a scatter-add)."""
    sums = jax.ops.segment_sum(values, segment_ids, num_segments=16)
    counts = jax.ops.segment_sum(jnp.ones_like(values[:, 0]), segment_ids, num_segments=16)
    return sums, sums / jnp.maximum(counts, 1.0)[:, None]


def cond_branch(x, threshold):
    """`lax.cond` on a data-dependent predicate: normalise or clip."""
    return lax.cond(
        x.mean() > threshold,
        lambda v: v / jnp.linalg.norm(v),
        lambda v: jnp.clip(v, -1.0, 1.0),
        x,
    )


def newton_sqrt(a):
    """A `while_loop` whose trip count depends on the data: Newton's iteration for sqrt
    until every element has converged."""

    def not_done(state):
        x, step = state
        return jnp.logical_and(jnp.max(jnp.abs(x * x - a)) > 1e-4 * jnp.max(a), step < 100)

    def step(state):
        x, i = state
        return 0.5 * (x + a / x), i + 1

    x, steps = lax.while_loop(not_done, step, (jnp.maximum(a, 1.0), 0))
    return x, steps


def embedding_bag(table, ids, weights):
    """Weighted mean of embedding rows per bag (`jnp.take` and a reduction)."""
    rows = jnp.take(table, ids, axis=0)  # [bags, per_bag, width]
    w = weights[..., None]
    return (rows * w).sum(1) / w.sum(1)


def masked_softmax_xent(logits, labels, mask):
    """Token-level cross-entropy with a padding mask, averaged over real tokens."""
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    return -(picked * mask).sum() / jnp.maximum(mask.sum(), 1.0)


def integer_hash(x):
    """Bit mixing on uint32 (xor, shifts, multiplies) and a bucket count, as data
    pipelines and random-number code do."""
    h = x.astype(jnp.uint32)
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x7FEB352D)
    h = h ^ (h >> 15)
    buckets = (h % 8).astype(jnp.int32)
    return h, jnp.bincount(buckets, length=8)


# ---------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------


PROGRAMS: dict[str, Program] = {
    "mlp_layernorm": Program(
        mlp_layernorm,
        lambda r: (
            normal(r, 64, 128),
            normal(r, 128, 256, scale=0.1),
            normal(r, 256, scale=0.1),
            normal(r, 256, 32, scale=0.1),
            normal(r, 32, scale=0.1),
            1 + normal(r, 128, scale=0.1),
            normal(r, 128, scale=0.1),
        ),
        "layer norm, dense + ReLU, dense",
    ),
    "softmax_attention": Program(
        softmax_attention,
        lambda r: (normal(r, 64, 32), normal(r, 64, 32), normal(r, 64, 32)),
        "scaled dot-product attention, no mask",
    ),
    "cnn_block": Program(
        cnn_block,
        lambda r: (
            normal(r, 4, 16, 16, 8),
            normal(r, 3, 3, 8, 16, scale=0.2),
            1 + normal(r, 16, scale=0.1),
            normal(r, 16, scale=0.1),
            normal(r, 16, scale=0.1),
            1 + np.abs(normal(r, 16, scale=0.1)),
        ),
        "conv 3x3 (NHWC/HWIO), batch norm, ReLU, 2x2 max pool",
        rtol=1e-4,
        atol=1e-4,
    ),
    "depthwise_avgpool": Program(
        depthwise_avgpool,
        lambda r: (normal(r, 2, 16, 16, 8), normal(r, 3, 3, 1, 8, scale=0.3)),
        "depthwise conv 3x3 (feature groups), 2x2 average pool",
        atol=1e-4,
    ),
    "audio_conv": Program(
        audio_conv,
        lambda r: (
            normal(r, 2, 8000, 1),
            normal(r, 10, 1, 32, scale=0.3),
            normal(r, 3, 32, 32, scale=0.1),
            normal(r, 32, scale=0.1),
        ),
        "1-D audio convolutions (stride 5, then dilated stride 2), GELU, ReLU",
        rtol=1e-4,
        atol=1e-4,
    ),
    "pool_gradient": Program(
        pool_gradient,
        lambda r: (normal(r, 4, 16, 16, 8),),
        "gradient of a 2x2 max pool (select_and_scatter)",
        atol=1e-5,
    ),
    "gpt2_block": Program(
        gpt2_block,
        lambda r: (
            r.integers(0, 256, 32).astype(np.int32),
            normal(r, 256, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            np.stack([1 + normal(r, 64, scale=0.1), normal(r, 64, scale=0.1)]),
            normal(r, 64, 192, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            np.stack([1 + normal(r, 64, scale=0.1), normal(r, 64, scale=0.1)]),
            normal(r, 64, 256, scale=0.1),
            normal(r, 256, 64, scale=0.1),
        ),
        "token embedding lookup, causal attention, GELU MLP, layer norms",
        atol=1e-4,
    ),
    "llama_block": Program(
        llama_block,
        lambda r: (
            normal(r, 32, 64),
            1 + normal(r, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            1 + normal(r, 64, scale=0.1),
            normal(r, 64, 128, scale=0.1),
            normal(r, 64, 128, scale=0.1),
            normal(r, 128, 64, scale=0.1),
        ),
        "RMSNorm, rotary embeddings, causal attention, SwiGLU",
        atol=1e-4,
    ),
    "lstm_scan": Program(
        lstm,
        lambda r: (
            normal(r, 16, 8, 32),
            normal(r, 32, 256, scale=0.1),
            normal(r, 64, 256, scale=0.1),
            normal(r, 256, scale=0.1),
        ),
        "an LSTM over 16 steps with lax.scan",
        atol=1e-4,
    ),
    "train_step": Program(
        train_step,
        lambda r: (
            normal(r, 64, 128, scale=0.1),
            np.zeros(128, np.float32),
            normal(r, 128, 10, scale=0.1),
            np.zeros(10, np.float32),
            normal(r, 32, 64),
            r.integers(0, 10, 32).astype(np.int32),
        ),
        "value_and_grad of a classifier's loss and an SGD update",
        atol=1e-4,
        donate=(0, 1, 2, 3),
    ),
    "kv_cache_decode": Program(
        kv_cache_decode,
        lambda r: (
            normal(r, 1, 64),
            normal(r, 4, 128, 16),
            normal(r, 4, 128, 16),
            np.int32(37),
            normal(r, 64, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
            normal(r, 64, 64, scale=0.1),
        ),
        "one decode step: dynamic_update_slice into the KV caches, masked attention",
        atol=1e-4,
        donate=(1, 2),
    ),
    "classifier_head": Program(
        classifier_head,
        lambda r: (normal(r, 16, 64), normal(r, 64, 100)),
        "logits, lax.top_k and argmax",
        atol=1e-4,
    ),
    "sort_and_rank": Program(
        sort_and_rank, lambda r: (normal(r, 16, 100),), "jnp.sort, argsort and median"
    ),
    "cumulative": Program(
        cumulative, lambda r: (normal(r, 8, 256),), "cumsum, cumprod, cummax", atol=1e-4
    ),
    "mixed_precision_matmul": Program(
        mixed_precision_matmul,
        lambda r: (
            normal(r, 64, 128, dtype=jnp.bfloat16),
            normal(r, 128, 64, scale=0.1, dtype=jnp.bfloat16),
            normal(r, 64),
        ),
        "bf16 operands, f32 accumulation, bf16 result",
        rtol=1e-2,
        atol=1e-2,
    ),
    "exact_gelu_std": Program(
        exact_gelu_std, lambda r: (normal(r, 64, 256),), "GELU with erf, x.std()", atol=1e-5
    ),
    "segment_mean": Program(
        segment_mean,
        lambda r: (normal(r, 256, 32), r.integers(0, 16, 256).astype(np.int32)),
        "jax.ops.segment_sum (scatter-add) and per-segment means",
        atol=1e-4,
    ),
    "cond_branch": Program(
        cond_branch,
        lambda r: (normal(r, 1024), np.float32(0.0)),
        "lax.cond on a data-dependent predicate",
    ),
    "newton_sqrt": Program(
        newton_sqrt,
        lambda r: (np.abs(normal(r, 1024)) * 10 + 0.1,),
        "while_loop until convergence (a data-dependent trip count)",
    ),
    "embedding_bag": Program(
        embedding_bag,
        lambda r: (
            normal(r, 1000, 32),
            r.integers(0, 1000, (64, 8)).astype(np.int32),
            np.abs(normal(r, 64, 8)) + 0.1,
        ),
        "jnp.take of embedding rows, weighted mean per bag",
    ),
    "masked_softmax_xent": Program(
        masked_softmax_xent,
        lambda r: (
            normal(r, 8, 32, 128),
            r.integers(0, 128, (8, 32)).astype(np.int32),
            (r.random((8, 32)) > 0.2).astype(np.float32),
        ),
        "token cross-entropy with take_along_axis and a padding mask",
        atol=1e-4,
    ),
    "integer_hash": Program(
        integer_hash,
        lambda r: (r.integers(0, 2**31, 4096).astype(np.int32),),
        "uint32 xor/shift/multiply mixing and a bincount",
    ),
}
"""Name -> program, in the order the reports list them."""

__all__ = ["PROGRAMS", "Program"]
