"""The front doors on programs others wrote: `accy.jit` against `jax.jit`, and
`accy.torch.compile` against PyTorch.

    python benchmarks/front_doors.py [--jax] [--torch] [--markdown]

- `--jax`: every program of the model zoo (`benchmarks/zoo/programs.py`, with its
  donated arguments) and transformers 4.57's Flax BERT-base, GPT-2 and ViT-base (random
  initialisation, real sizes, parameters as the pytree transformers builds) through
  `accy.jit(f)` and `jax.jit(f)` on the same arguments; an output is right within the
  zoo program's rtol/atol (models: 1e-4 / 2e-4).
- `--torch`: `nn.Sequential` MLP, `nn.TransformerEncoderLayer`, `nn.LSTM`, torchvision's
  resnet18, mobilenet_v3_small and vit_b_16 (224x224, random initialisation, every
  `nn.Linear` drawn with std 1/sqrt(fan-in) so that no head is zero) and transformers
  4.57's BertModel, GPT2LMHeadModel (eager attention: torch-mlir cannot export its sdpa
  form) and LlamaForCausalLM at small configs, f32 and bf16, through
  `accy.torch.compile(module, inputs)` against the module in eval mode; right within
  2e-5 (f32) or 3e-2 (bf16) of the largest output magnitude.

Each row also says whether a second call with equal shapes compiled nothing and the
first call's time (export and compile; the compile cache off). Needs JAX, flax and
transformers 4.57 (`--jax`), PyTorch, torchvision and transformers (`--torch`); none are
test requirements. torchvision's wheels carry compiled ops (`torchvision::nms`, ...) built
against CUDA PyTorch; with a CPU PyTorch they do not load and its import fails while
registering their fake implementations: `import_torchvision` then imports it with those
registrations skipped (its models use none of the ops).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np
from timing import print_table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "zoo"))


def _row(name: str, first_seconds: float, worst: float, bound: float, again: bool) -> list[str]:
    verdict = "right" if worst <= bound else "WRONG"
    return [name, verdict, f"{worst:.1e}", f"{bound:.0e}", f"{first_seconds:.1f}", str(again)]


def jax_rows() -> list[list[str]]:
    import jax
    from programs import PROGRAMS

    import accy

    rows = []
    for name, program in PROGRAMS.items():
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        args = program.arguments(rng)
        want = jax.jit(program.function)(*[np.array(a, copy=True) for a in args])
        fast = accy.jit(program.function, donate_argnums=program.donate)
        start = time.perf_counter()
        got = fast(*args)
        seconds = time.perf_counter() - start
        fast(*args)
        worst, bound = _excess(got, want, program.rtol, program.atol)
        rows.append(_row(f"zoo {name}", seconds, worst, bound, len(fast.compiled) == 1))
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    for name, (function, args) in flax_models().items():
        want = jax.jit(function)(*args)
        fast = accy.jit(function)
        start = time.perf_counter()
        got = fast(*args)
        seconds = time.perf_counter() - start
        fast(*args)
        worst, bound = _excess(got, want, 1e-4, 2e-4)
        rows.append(_row(name, seconds, worst, bound, len(fast.compiled) == 1))
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _excess(got, want, rtol: float, atol: float) -> tuple[float, float]:
    """The largest |got - want| beyond `rtol * |want|` (0 when all are within), and
    `atol`: an output is right when the first is at most the second."""
    import jax

    worst = 0.0
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        worst = max(worst, float(np.max(np.abs(g - w) - rtol * np.abs(w), initial=0.0)))
    return worst, atol


def flax_models() -> dict:
    """`{name: (function, arguments)}`: transformers' Flax models as users call them."""
    import transformers as tf

    rng = np.random.default_rng(0)
    models = {}
    bert = tf.FlaxBertModel(tf.BertConfig(), seed=0)
    ids = rng.integers(0, 30522, (1, 128), dtype=np.int32)

    def bert_forward(params, ids, mask):
        return bert.module.apply({"params": params}, ids, mask, deterministic=True)[0]

    models["flax BertModel base, 128 tokens"] = (
        bert_forward,
        (bert.params, ids, np.ones_like(ids)),
    )
    gpt2 = tf.FlaxGPT2Model(tf.GPT2Config(), seed=0)
    ids = rng.integers(0, 50257, (1, 128), dtype=np.int32)
    positions = np.arange(128, dtype=np.int32)[None]

    def gpt2_forward(params, ids, mask, positions):
        return gpt2.module.apply({"params": params}, ids, mask, positions, deterministic=True)[0]

    models["flax GPT2Model, 128 tokens"] = (
        gpt2_forward,
        (gpt2.params, ids, np.ones_like(ids), positions),
    )
    vit = tf.FlaxViTModel(tf.ViTConfig(), seed=0)
    pixels = rng.standard_normal((1, 224, 224, 3), dtype=np.float32)

    def vit_forward(params, pixels):
        return vit.module.apply({"params": params}, pixels, deterministic=True)[0]

    models["flax ViTModel base, 224x224"] = (vit_forward, (vit.params, pixels))
    return models


def import_torchvision():
    """torchvision, imported with its compiled ops' fake registrations skipped when the ops
    library does not load (see the module doc)."""
    import torch

    try:
        import torchvision
    except RuntimeError:  # "operator torchvision::nms does not exist"
        for name in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[name]
        register_fake = torch.library.register_fake
        torch.library.register_fake = lambda *args, **kwargs: lambda function: function
        try:
            import torchvision
        finally:
            torch.library.register_fake = register_fake
    return torchvision


def vision(name: str):
    """torchvision's model `name`, every `nn.Linear` drawn with std 1/sqrt(fan-in)."""
    import torch

    model = getattr(import_torchvision().models, name)()
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.normal_(module.weight, std=module.in_features**-0.5)
    return model


def torch_rows() -> list[list[str]]:
    import torch
    import transformers as tf

    import accy

    def small(kind: str):
        torch.manual_seed(0)
        if kind == "bert":
            config = tf.BertConfig(
                hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256
            )
            return tf.BertModel(config)
        if kind == "gpt2":
            config = tf.GPT2Config(
                n_embd=128, n_layer=2, n_head=4, use_cache=False, attn_implementation="eager"
            )
            return tf.GPT2LMHeadModel(config)
        config = tf.LlamaConfig(
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=256,
            vocab_size=32000,
            use_cache=False,
        )
        return tf.LlamaForCausalLM(config)

    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (2, 32))
    cases = [
        (
            "MLP",
            lambda: torch.nn.Sequential(
                torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)
            ),
            (8, 64),
        ),
        (
            "TransformerEncoderLayer 256, 8 heads",
            lambda: torch.nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True),
            (2, 32, 256),
        ),
        ("LSTM 64 -> 128", lambda: torch.nn.LSTM(64, 128, batch_first=True), (2, 16, 64)),
        ("torchvision resnet18", lambda: vision("resnet18"), (1, 3, 224, 224)),
        ("torchvision mobilenet_v3_small", lambda: vision("mobilenet_v3_small"), (1, 3, 224, 224)),
        ("torchvision vit_b_16", lambda: vision("vit_b_16"), (1, 3, 224, 224)),
        ("transformers BertModel (2 layers, 128)", lambda: small("bert"), ids),
        ("transformers GPT2LMHeadModel (2 layers, 128)", lambda: small("gpt2"), ids),
        ("transformers LlamaForCausalLM (2 layers, 128)", lambda: small("llama"), ids),
    ]
    rows = []
    for name, make, shape in cases:
        for dtype in (torch.float32, torch.bfloat16):
            torch.manual_seed(0)
            module = make().to(dtype).eval()
            x = shape if isinstance(shape, torch.Tensor) else torch.randn(*shape, dtype=dtype)
            with torch.no_grad():
                want = module(x)
            start = time.perf_counter()
            compiled = accy.torch.compile(module, (x,))
            got = compiled(x)
            seconds = time.perf_counter() - start
            compiled(x)
            worst, scale = 0.0, 0.0
            pairs = zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want))
            for g, w in pairs:
                worst = max(worst, float((g.double() - w.double()).abs().max()))
                scale = max(scale, float(w.double().abs().max()))
            tolerance = (2e-5 if dtype == torch.float32 else 3e-2) * scale
            label = f"torch {name}, {str(dtype).removeprefix('torch.')}"
            rows.append(_row(label, seconds, worst, tolerance, len(compiled.compiled) == 1))
            print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jax", action="store_true")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    os.environ["ACCY_CACHE"] = "0"
    rows = []
    if args.jax or not args.torch:
        rows += jax_rows()
    if args.torch or not args.jax:
        rows += torch_rows()
    header = ["program", "result", "worst excess", "bound", "first call s", "second compiles none"]
    print_table(header, rows, args.markdown)
    return 0 if all(row[1] == "right" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
