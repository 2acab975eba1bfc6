"""Optimizer state_dict/load_state_dict: PyTorch's layout and bit-identical steps.

A restored optimizer takes the same steps; the package generator's state round-trips too.
"""
import numpy as np
import pytest

import microtensor as mt
import nn
from nn.optim import SGD, AdamW


def params():
    rng = np.random.default_rng(0)
    return [nn.Parameter(rng.standard_normal((3, 2)).astype(np.float32)),
            nn.Parameter(rng.standard_normal(2).astype(np.float32))]


def step(opt, ps, seed):
    grads = np.random.default_rng(seed)
    for p in ps:
        p.grad = grads.standard_normal(p.shape).astype(np.float32)
    opt.step()


@pytest.mark.parametrize("optimizer_cls, options", [(AdamW, {"lr": 0.1}),
                                                    (SGD, {"lr": 0.1, "momentum": 0.9})])
def test_a_restored_optimizer_continues_bit_identically(optimizer_cls, options):
    ps = params()
    opt = optimizer_cls([{"params": ps[:1]}, {"params": ps[1:], "weight_decay": 0.0}], **options)
    for seed in range(3):
        step(opt, ps, seed)
    snapshot = opt.state_dict()
    copies = [nn.Parameter(p.data.copy()) for p in ps]
    restored = optimizer_cls([{"params": copies[:1]}, {"params": copies[1:]}], **options)
    restored.load_state_dict(snapshot)
    for seed in range(3, 6):
        step(opt, ps, seed)
        step(restored, copies, seed)
    for p, q in zip(ps, copies):
        assert np.array_equal(p.data, q.data), f"expected identical weights; got {p.data} {q.data}"
    assert restored.param_groups[1]["weight_decay"] == 0.0, "expected the saved group option"


def test_adamw_state_dict_has_pytorchs_layout():
    ps = params()
    opt = AdamW(ps, lr=0.1)
    step(opt, ps, 0)
    snapshot = opt.state_dict()
    assert set(snapshot) == {"state", "param_groups"}
    assert sorted(snapshot["state"]) == [0, 1]
    assert set(snapshot["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert snapshot["state"][0]["step"] == 1
    assert snapshot["param_groups"][0]["params"] == [0, 1]
    step(opt, ps, 1)
    assert snapshot["state"][0]["step"] == 1, "expected a snapshot, not live buffers"


def test_adamw_state_dict_keys_are_torchs():
    torch = pytest.importorskip("torch")
    p = torch.nn.Parameter(torch.ones(2))
    theirs = torch.optim.AdamW([p], lr=0.1)
    p.grad = torch.ones(2)
    theirs.step()
    ours = AdamW(params()[1:], lr=0.1)
    step(ours, ours.param_groups[0]["params"], 0)
    assert set(ours.state_dict()["state"][0]) == set(theirs.state_dict()["state"][0])
    assert set(ours.state_dict()["param_groups"][0]) <= set(theirs.state_dict()["param_groups"][0])


@pytest.mark.parametrize("change, message", [
    (lambda s: s["param_groups"].append(dict(s["param_groups"][0])), "2 parameter groups"),
    (lambda s: s["state"][0].update(exp_avg=np.zeros(5, np.float32)), "shape"),
    (lambda s: s["state"].update({7: s["state"][0]}), "parameter 7"),
])
def test_load_state_dict_names_what_does_not_fit(change, message):
    ps = params()
    opt = AdamW(ps, lr=0.1)
    step(opt, ps, 0)
    snapshot = opt.state_dict()
    change(snapshot)
    with pytest.raises(ValueError, match=message):
        AdamW(params(), lr=0.1).load_state_dict(snapshot)


def test_the_generator_state_round_trips():
    mt.manual_seed(3)
    mt.randn(4)
    state = mt.random.get_rng_state()
    first = mt.randn(5).data
    mt.manual_seed(99)
    mt.random.set_rng_state(state)
    assert np.array_equal(mt.randn(5).data, first), "expected the same draws after set_rng_state"
    with pytest.raises(ValueError, match="PCG64"):
        mt.random.set_rng_state({"bit_generator": "MT19937"})


def test_load_state_dict_of_an_adamw_state_without_a_buffer_names_the_missing_buffer():
    p = nn.Parameter(np.ones(3, dtype=np.float32))
    p.grad = np.ones(3, dtype=np.float32)
    opt = AdamW([p])
    opt.step()
    saved = opt.state_dict()
    for buffers in saved["state"].values():
        del buffers["exp_avg_sq"]
    fresh = AdamW([p])
    with pytest.raises(ValueError, match="lacks 'exp_avg_sq'") as caught:
        fresh.load_state_dict(saved)
    assert "\n" not in str(caught.value), f"expected one line, got {caught.value!r}"
