"""`accy.torch.compile` on modules PyTorch users write (runs where PyTorch is installed):
the module's outputs in its own structure, one program per input signature, numpy in and
out, bf16."""

from __future__ import annotations

import numpy as np
import pytest

import accy

torch = pytest.importorskip("torch")


def _close(got, want, atol: float) -> None:
    got_leaves = torch.utils._pytree.tree_leaves(got)
    want_leaves = torch.utils._pytree.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert isinstance(g, torch.Tensor) and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.float().numpy(), w.float().numpy(), atol=atol, rtol=1e-4)


def test_an_lstm_returns_its_output_and_states_and_compiles_once_per_signature():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 16, batch_first=True)
    x = torch.randn(2, 5, 8)
    compiled = accy.torch.compile(lstm, (x,))
    with torch.no_grad():
        want = lstm(x)
    _close(compiled(x), want, atol=1e-5)  # (output, (h, c)), as the module returns it
    compiled(torch.randn(2, 5, 8))
    assert len(compiled.compiled) == 1
    longer = torch.randn(2, 7, 8)
    with torch.no_grad():
        _close(compiled(longer), lstm(longer), atol=1e-5)
    assert len(compiled.compiled) == 2


def test_training_mode_is_left_as_it_was_and_the_compile_computes_eval_mode():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)  # dropout 0.1
    x = torch.randn(2, 6, 32)
    compiled = accy.torch.compile(layer, x)
    assert layer.training
    got = compiled(x)
    with torch.no_grad():
        want = layer.eval()(x)
    _close(got, want, atol=2e-6)


def test_numpy_in_numpy_out_and_parameters_read_at_each_call():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    compiled = accy.torch.compile(model, x)
    (got,) = [compiled(x)]
    assert isinstance(got, np.ndarray)
    with torch.no_grad():
        model[0].weight.mul_(2.0)  # in place: the compiled module sees the new weights
        want = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(compiled(x), want, rtol=1e-5, atol=1e-6)


def test_a_bf16_module_matches_pytorch():
    torch.manual_seed(1)
    layers = [torch.nn.LayerNorm(64), torch.nn.Linear(64, 96), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).to(torch.bfloat16)
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    with torch.no_grad():
        _close(accy.torch.compile(model, x)(x), model(x), atol=3e-2)


def test_what_is_not_a_module_is_a_type_error():
    with pytest.raises(accy.AccyTypeError, match="module must be a torch.nn.Module"):
        accy.torch.compile(lambda x: x, (torch.ones(2),))


def test_a_module_that_cannot_be_exported_is_an_accy_error():
    class Branching(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x  # data-dependent control flow

    with pytest.raises(accy.AccyError, match="could not export Branching to StableHLO"):
        accy.torch.compile(Branching(), (torch.ones(3),))
