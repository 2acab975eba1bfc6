"""The optimizer surface a PyTorch user reaches for (issue 32, loud findings): `state[p]`,
`add_param_group`, `step(closure)`, AdamW's amsgrad, maximize, SGD's default lr, each compared
with torch.optim in float64; and saved states, old and new, still round-trip."""
import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nn  # noqa: E402

rng = np.random.default_rng(32)


def _pair(*shapes):
    start = [rng.normal(size=s) for s in shapes]
    return ([nn.Parameter(a.copy()) for a in start],
            [torch.nn.Parameter(torch.tensor(a)) for a in start])


def _grads(ours, theirs):
    for p, q in zip(ours, theirs):
        g = rng.normal(size=p.shape)
        p.grad, q.grad = g.copy(), torch.tensor(g)


def _same(ours, theirs, what):
    for i, (p, q) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=1e-12, atol=1e-15,
                                   err_msg=f"parameter {i} {what}: expected torch's values")


def test_state_is_keyed_by_the_parameter_as_torch():
    (p,), (q,) = _pair((2, 3))
    ours, theirs = nn.optim.AdamW([p], lr=0.1), torch.optim.AdamW([q], lr=0.1, foreach=False)
    _grads([p], [q])
    ours.step()
    theirs.step()
    assert set(ours.state[p]) == set(theirs.state[q]) == {"step", "exp_avg", "exp_avg_sq"}
    np.testing.assert_allclose(ours.state[p]["exp_avg_sq"],
                               theirs.state[q]["exp_avg_sq"].numpy(), rtol=1e-12)
    assert list(ours.state) == [p], "expected the parameter itself as the key"
    other = nn.Parameter(np.ones(2))
    assert ours.state[other] == {} == theirs.state[torch.nn.Parameter(torch.ones(2))]


@pytest.mark.parametrize("make", ["SGD", "AdamW"])
def test_add_param_group_adds_a_group_with_its_own_options_as_torch(make):
    (a, b), (ta, tb) = _pair((3,), (2, 2))
    kind = {"SGD": (nn.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
            "AdamW": (nn.optim.AdamW, torch.optim.AdamW, dict(lr=0.1))}[make]
    ours, theirs = kind[0]([a], **kind[2]), kind[1]([ta], foreach=False, **kind[2])
    for step in range(4):
        if step == 2:  # unfreeze b halfway, with a learning rate of its own
            ours.add_param_group({"params": [b], "lr": 0.01})
            theirs.add_param_group({"params": [tb], "lr": 0.01})
            assert {k: v for k, v in ours.param_groups[1].items() if k != "params"} == {
                k: theirs.param_groups[1][k] for k in ours.param_groups[1] if k != "params"}
        _grads([a, b], [ta, tb])
        ours.step()
        theirs.step()
        _same([a, b], [ta, tb], f"after step {step + 1}")
    with pytest.raises(ValueError, match="appears twice"):
        ours.add_param_group({"params": [b]})


@pytest.mark.parametrize("make", ["SGD", "AdamW"])
def test_step_calls_the_closure_and_returns_its_loss_as_torch(make):
    (p,), (q,) = _pair((3,))
    ours = getattr(nn.optim, make)([p], lr=0.1)
    theirs = getattr(torch.optim, make)([q], lr=0.1, foreach=False)

    def closure(w, opt, backward):
        opt.zero_grad()
        loss = (w * w).sum()
        backward(loss)
        return loss
    for _ in range(3):
        got = ours.step(lambda: closure(p, ours, lambda loss: loss.backward()))
        want = theirs.step(lambda: closure(q, theirs, lambda loss: loss.backward()))
        assert abs(float(got.item()) - want.item()) < 1e-12, (
            f"expected the closure's loss {want.item()}, got {got}")
    _same([p], [q], "after three closure steps")
    assert ours.step() is None


@pytest.mark.parametrize("options", [dict(amsgrad=True), dict(maximize=True),
                                     dict(amsgrad=True, maximize=True, weight_decay=0.3)])
def test_adamw_amsgrad_and_maximize_step_as_torch(options):
    (p, r), (q, s) = _pair((4,), ())
    ours = nn.optim.AdamW([p, r], lr=0.05, **options)
    theirs = torch.optim.AdamW([q, s], lr=0.05, foreach=False, **options)
    for step in range(5):
        _grads([p, r], [q, s])
        ours.step()
        theirs.step()
        _same([p, r], [q, s], f"after step {step + 1} with {options}")
    if options.get("amsgrad"):
        np.testing.assert_allclose(ours.state[p]["max_exp_avg_sq"],
                                   theirs.state[q]["max_exp_avg_sq"].numpy(), rtol=1e-12)


def test_sgd_maximize_and_its_default_lr_are_torch_s():
    (p, r), (q, s) = _pair((3,), (3,))
    plain, their_plain = nn.optim.SGD([p]), torch.optim.SGD([q], foreach=False)
    assert plain.defaults["lr"] == their_plain.defaults["lr"] == 1e-3
    up = nn.optim.SGD([r], lr=0.1, momentum=0.5, weight_decay=0.1, maximize=True)
    their_up = torch.optim.SGD([s], lr=0.1, momentum=0.5, weight_decay=0.1, maximize=True,
                               foreach=False)
    for step in range(3):
        _grads([p, r], [q, s])
        for opt in (plain, their_plain, up, their_up):
            opt.step()
        _same([p, r], [q, s], f"after step {step + 1}")


def test_an_amsgrad_state_with_an_added_group_round_trips_as_torch():
    (a, b), (ta, tb) = _pair((2,), (3,))
    ours = nn.optim.AdamW([a], lr=0.1, amsgrad=True)
    theirs = torch.optim.AdamW([ta], lr=0.1, amsgrad=True, foreach=False)
    ours.add_param_group({"params": [b], "weight_decay": 0.0})
    theirs.add_param_group({"params": [tb], "weight_decay": 0.0})
    for _ in range(2):
        _grads([a, b], [ta, tb])
        ours.step()
        theirs.step()
    saved, their_saved = ours.state_dict(), copy.deepcopy(theirs.state_dict())
    ours = nn.optim.AdamW([{"params": [a]}, {"params": [b]}], lr=0.1, amsgrad=True)
    theirs = torch.optim.AdamW([{"params": [ta]}, {"params": [tb]}], lr=0.1, amsgrad=True,
                               foreach=False)
    ours.load_state_dict(saved)
    theirs.load_state_dict(their_saved)
    assert ours.param_groups[1]["weight_decay"] == theirs.param_groups[1]["weight_decay"] == 0
    for step in range(2):
        _grads([a, b], [ta, tb])
        ours.step()
        theirs.step()
        _same([a, b], [ta, tb], f"after loading and {step + 1} steps")
    missing = {"state": {0: {k: v for k, v in saved["state"][0].items()
                             if k != "max_exp_avg_sq"}}, "param_groups": saved["param_groups"]}
    with pytest.raises(ValueError, match="lacks 'max_exp_avg_sq'"):
        nn.optim.AdamW([{"params": [a]}, {"params": [b]}], amsgrad=True).load_state_dict(missing)


def test_a_state_saved_before_amsgrad_and_maximize_existed_still_loads():
    """A checkpoint on a user's disk from before this round: groups without the new keys."""
    (p,), _ = _pair((3,))
    old = {"state": {0: {"step": 2, "exp_avg": np.full(3, 0.1), "exp_avg_sq": np.full(3, 0.01)}},
           "param_groups": [{"lr": 0.1, "betas": [0.9, 0.999], "eps": 1e-8,
                             "weight_decay": 0.0, "params": [0]}]}
    opt = nn.optim.AdamW([p], lr=0.5)
    opt.load_state_dict(old)
    group = opt.param_groups[0]
    assert group["lr"] == 0.1 and group["betas"] == (0.9, 0.999)
    assert group["amsgrad"] is False and group["maximize"] is False
    assert opt.state[p]["step"] == 2
    np.testing.assert_array_equal(opt.state[p]["exp_avg"], np.full(3, 0.1))
