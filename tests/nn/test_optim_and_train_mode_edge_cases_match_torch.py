"""Optimizers' and train mode's edge cases against PyTorch in float64 (or torch's refusal): a 0-d
parameter's AdamW state, clip_grad_norm_'s norm types, train(mode), a step between forward and
backward (found in issue 25)."""
import numpy as np
import pytest

import nn

torch = pytest.importorskip("torch")


def test_adamw_on_a_0d_parameter_keeps_stepping_after_a_state_round_trip():
    """Found: 0-d moment buffers came back as Python floats, so `m *= beta1` rebound a local
    and the state froze (exp_avg 0.1 where torch has 0.3439 after 3 more steps)."""
    p = nn.Parameter(np.array(1.0))
    tp = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    opt, topt = nn.optim.AdamW([p], lr=0.1), torch.optim.AdamW([tp], lr=0.1)
    for step in range(4):
        if step == 1:  # round trip after the first step
            opt2 = nn.optim.AdamW([p], lr=0.1)
            opt2.load_state_dict(opt.state_dict())
            opt = opt2
        p.grad = np.array(1.0)
        tp.grad = torch.tensor(1.0, dtype=torch.float64)
        opt.step()
        topt.step()
    state, tstate = opt.state[p], topt.state[tp]
    assert isinstance(state["exp_avg"], np.ndarray) and state["exp_avg"].shape == ()
    np.testing.assert_allclose(state["exp_avg"], tstate["exp_avg"].item(), rtol=1e-12,
                               err_msg="exp_avg after a round trip: expected torch's")
    np.testing.assert_allclose(state["exp_avg_sq"], tstate["exp_avg_sq"].item(), rtol=1e-12)
    np.testing.assert_allclose(p.data, tp.item(), rtol=1e-12, err_msg="p after 4 steps")


@pytest.mark.parametrize("norm_type", [0, 1, 2, 3, 0.5, float("inf"), -float("inf")])
def test_clip_grad_norm_returns_and_scales_as_torch_for_each_norm_type(norm_type):
    """Found: norm_type=0 returned 32 and scaled by 1/32 (rescaling by the largest |g| holds
    only for homogeneous norms); torch returns 2 and scales by 1/2."""
    grads = [np.array([[0.0, 1, -2], [3, 0, 4]]), np.array([5.0, -6])]
    ps = [nn.Parameter(g.copy()) for g in grads]
    tps = [torch.tensor(g, requires_grad=True) for g in grads]
    for p, tp, g in zip(ps, tps, grads):
        p.grad, tp.grad = g.copy(), torch.tensor(g)
    total = nn.utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(tps, 1.0, norm_type=norm_type).item()
    assert total == pytest.approx(expected, rel=1e-12), f"norm {norm_type}: {total} vs {expected}"
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.grad, tp.grad.numpy(), rtol=1e-12,
                                   err_msg=f"clipped grads for norm_type={norm_type}")


@pytest.mark.parametrize("mode", ["False", 0, 1, None, np.bool_(False)])
def test_module_train_refuses_anything_but_a_bool_as_torch(mode):
    """Found: train("False") kept a truthy string and dropout stayed on."""
    with pytest.raises(ValueError) as ours:
        nn.Dropout(0.5).train(mode)
    with pytest.raises(ValueError):
        torch.nn.Dropout(0.5).train(mode)
    assert "mode" in str(ours.value) and repr(mode) in str(ours.value)


def test_module_train_takes_both_bools():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert all(not s.training for s in m.train(False).modules())
    assert all(s.training for s in m.train(True).modules())
    assert not m.eval().training


def test_sgd_step_between_forward_and_backward_refuses_as_torch():
    """Found: SGD between forward and backward gave twice the *updated* w, [1, 3]."""
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    tloss = (tw * tw).sum()
    tw.grad = torch.ones(2)
    torch.optim.SGD([tw], lr=0.5).step()
    with pytest.raises(RuntimeError, match="inplace"):
        tloss.backward()
    w = nn.Parameter(np.array([1.0, 2.0], np.float32))
    loss = (w * w).sum()
    w.grad = np.ones(2, np.float32)
    nn.optim.SGD([w], lr=0.5).step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()
