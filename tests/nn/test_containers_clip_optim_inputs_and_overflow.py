"""Containers take Modules only, clip_grad_norm_ takes one tensor or many, and float32 moments
and norms never overflow where PyTorch's do not (issue 16's examples, with torch as oracle)."""
import math

import numpy as np
import pytest

import microtensor.functional as F
import nn

torch = pytest.importorskip("torch")


# ---- containers -----------------------------------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda: nn.Sequential(nn.Linear(3, 4), F.relu, nn.Linear(4, 2)),
    lambda: nn.ModuleList([nn.Linear(3, 4), F.relu]),
    lambda: nn.ModuleList().append(F.relu),
    lambda: nn.ModuleList().extend([nn.ReLU(), "relu"]),
    lambda: nn.ModuleList([nn.ReLU()]).insert(0, 3),
])
def test_containers_refuse_what_is_not_a_module_naming_its_position(build):
    with pytest.raises(TypeError, match=r"entry \d+ is a \w+.*not a Module"):
        build()


def test_module_list_insert_setitem_delitem_keep_names_in_order():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 3)])
    layers.insert(1, nn.Linear(2, 2))
    layers[0] = nn.Linear(2, 2, bias=False)
    del layers[1]
    names = [n for n, _ in layers.named_parameters()]
    assert names == ["0.weight", "1.weight", "1.bias"], f"expected renumbered names, got {names}"
    assert layers[1].out_features == 3


def test_a_slice_of_a_module_list_leaves_the_models_parameter_names_alone():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    tail = model[1:]
    assert isinstance(tail, nn.Sequential) and len(tail) == 1
    assert model[1].weight.name == "1.weight", f"got {model[1].weight.name}"


# ---- clip_grad_norm_ ------------------------------------------------------------------------
def _param(grad):
    p = nn.Parameter(np.zeros_like(grad))
    p.grad = grad.copy()
    return p


def test_clip_grad_norm_of_a_single_parameter_clips_it_as_torch():
    grad = np.full((4, 5), 4.47213595, np.float32)  # norm 20
    p = _param(grad)
    total = nn.utils.clip_grad_norm_(p, 1.0)
    assert abs(total - 20.0) < 1e-4, f"expected total norm 20 (torch), got {total}"
    np.testing.assert_allclose(p.grad, grad / 20, rtol=1e-5,
                               err_msg="expected the gradient scaled by 1/20")


def test_clip_grad_norm_takes_a_generator():
    params = [_param(np.full(3, 4.0, np.float32)) for _ in range(2)]
    total = nn.utils.clip_grad_norm_((p for p in params), 1.0)
    assert abs(total - math.sqrt(96)) < 1e-4, f"expected √96, got {total}"
    assert abs(np.sqrt(sum((p.grad ** 2).sum() for p in params)) - 1) < 1e-5


@pytest.mark.parametrize("value", [2e19, 1e-30, 3e38, 1.5])
def test_clip_grad_norm_in_float32_gives_the_true_norm_without_overflow(value):
    """The norm is that of torch in float64; torch's float32 one overflows to inf at 2e19
    (and underflows to 0 at 1e-30), where ours stays the true value: never a wrong one."""
    grads = [np.full((3, 4), value, np.float32), np.array([value, -value], np.float32)]
    ours = [_param(g) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for t, g in zip(theirs, grads):
        t.grad = torch.tensor(g, dtype=torch.float64)
    got = nn.utils.clip_grad_norm_(ours, 1.0)
    want = float(torch.nn.utils.clip_grad_norm_(theirs, 1.0))
    assert math.isclose(got, want, rel_tol=1e-6), f"expected total {want}, got {got}"
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), rtol=1e-6, atol=1e-38)


def test_clip_grad_norm_with_an_infinite_gradient_behaves_as_torch():
    grad = np.array([np.inf, 1.0], np.float32)
    p, t = _param(grad), torch.nn.Parameter(torch.zeros(2))
    t.grad = torch.tensor(grad)
    got, want = nn.utils.clip_grad_norm_(p, 1.0), torch.nn.utils.clip_grad_norm_(t, 1.0)
    assert math.isinf(got) and math.isinf(want)
    np.testing.assert_array_equal(p.grad, t.grad.numpy(), err_msg="expected [nan, 0] as torch")
    with pytest.raises(RuntimeError, match="total norm"):
        nn.utils.clip_grad_norm_(_param(grad), 1.0, error_if_nonfinite=True)


# ---- optimizers -----------------------------------------------------------------------------
def test_adamw_float32_survives_a_gradient_of_2e19_as_torch():
    p = nn.Parameter(np.ones(1, np.float32))
    opt = nn.optim.AdamW([p], lr=0.1, weight_decay=0.0)
    for g in (2e19, 1.0, 1.0, 1.0):
        p.grad = np.full(1, g, np.float32)
        opt.step()
    assert np.isfinite(opt.state[p]["exp_avg_sq"]).all()
    assert abs(p.data[0] - 0.7388) < 1e-4, f"expected 0.7388 (torch), got {p.data[0]}"


@pytest.mark.parametrize("betas, weight_decay", [((0.9, 0.999), 0.01), ((0.3, 0.5), 0.0)])
def test_adamw_float32_follows_torch_over_steps_of_growing_gradients(betas, weight_decay):
    rng = np.random.default_rng(0)
    start = rng.standard_normal((5, 7)).astype(np.float32)
    ours = nn.Parameter(start.copy())
    theirs = torch.nn.Parameter(torch.tensor(start))
    opt = nn.optim.AdamW([ours], lr=0.01, betas=betas, weight_decay=weight_decay)
    topt = torch.optim.AdamW([theirs], lr=0.01, betas=betas, weight_decay=weight_decay)
    for step in range(6):
        g = (rng.standard_normal((5, 7)) * 10.0 ** (step * 3)).astype(np.float32)
        ours.grad, theirs.grad = g.copy(), torch.tensor(g)
        opt.step()
        topt.step()
        # not bit for bit: torch's float32 sqrt (vectorised) is not correctly rounded
        np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-6, atol=1e-7,
                                   err_msg=f"step {step}: expected torch's float32 values")


@pytest.mark.parametrize("cls", [nn.optim.SGD, nn.optim.AdamW])
def test_optimizers_refuse_a_single_tensor_as_torch(cls):
    with pytest.raises(TypeError, match="single Tensor"):
        cls(nn.Parameter(np.zeros(3, np.float32)), lr=0.1)
    cls((p for p in [nn.Parameter(np.zeros(3, np.float32))]), lr=0.1)  # a generator is fine


def test_a_single_tensor_as_a_groups_params_is_that_parameter_as_torch():
    p = nn.Parameter(np.ones((2, 3), np.float32))
    opt = nn.optim.SGD([{"params": p}], lr=0.5)
    p.grad = np.ones((2, 3), np.float32)
    opt.step()
    np.testing.assert_array_equal(p.data, np.full((2, 3), 0.5, np.float32),
                                  err_msg="expected the parameter itself to move")


def test_optimizers_refuse_a_non_leaf_tensor_as_torch():
    p = nn.Parameter(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="non-leaf"):
        nn.optim.AdamW([p * 2])
