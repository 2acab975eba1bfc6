"""nn's edge cases where a result could silently differ from torch's (attention's alignment and
learned masks, module assignment, copies, torch's positional arguments, refusals), each pinned
against torch or a hand calculation (found in issues 16 and 25)."""
import copy
import math
import pickle

import numpy as np
import pytest

import microtensor as mt
import microtensor.functional as F
import nn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def test_causal_attention_with_t_q_other_than_t_k_names_its_alignment():
    mha = nn.MultiHeadAttention(8, 2, keep_attention=True)
    x = mt.Tensor(rng.standard_normal((1, 2, 8)).astype(np.float32))
    ctx = mt.Tensor(rng.standard_normal((1, 4, 8)).astype(np.float32))
    with pytest.raises(ValueError, match="needs causal_alignment"):
        mha(x, context=ctx, is_causal=True)
    mha(x, context=ctx, is_causal=True, causal_alignment="top_left")
    top_left = mha.last_attention.data[0, 0]
    q, k, v = (mha._split_heads(p(a)) for p, a in ((mha.q_proj, x), (mha.k_proj, ctx),
                                                     (mha.v_proj, ctx)))
    _, weights = nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(top_left, weights.data[0, 0], rtol=1e-6,
                               err_msg="expected the function's (torch's) top-left rule")
    _, right = nn.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               causal_alignment="bottom_right")
    assert (right.data[0, 0, 0, :3] > 0).all(), "bottom-right: query 0 sees keys 0..2"


def test_a_learned_float_attn_mask_gets_torchs_gradient():
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    bias = rng.standard_normal((3, 3))
    ours = mt.Tensor(bias, requires_grad=True)
    out, _ = nn.scaled_dot_product_attention(mt.Tensor(q), mt.Tensor(k), mt.Tensor(v),
                                             attn_mask=ours)
    out.sum().backward()
    theirs = torch.tensor(bias, requires_grad=True)
    torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), attn_mask=theirs).sum().backward()
    assert ours.grad is not None, "expected the bias to get a gradient"
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-10)


def test_a_learned_attn_mask_in_multihead_attention_gets_a_gradient_with_padding():
    mha = nn.MultiHeadAttention(8, 2, keep_attention=True)
    x = mt.Tensor(rng.standard_normal((2, 3, 8)).astype(np.float32))
    bias = mt.Tensor(np.zeros((3, 3), np.float32), requires_grad=True)
    pad = np.array([[False, False, True], [False, False, False]])
    mha(x, attn_mask=bias, key_padding_mask=pad, is_causal=True).sum().backward()
    assert bias.grad is not None and np.isfinite(bias.grad).all()
    assert (mha.last_attention.data[0, :, :, 2] == 0).all(), "padding still blocked"


def test_last_attention_is_read_only_so_a_picture_cannot_change_the_gradients():
    mha = nn.MultiHeadAttention(8, 2, keep_attention=True)
    mha(mt.Tensor(np.ones((1, 3, 8), np.float32)), is_causal=True)
    with pytest.raises(ValueError, match="read-only"):
        mha.last_attention.data[mha.last_attention.data < 0.2] = 0


def test_assigning_a_plain_tensor_over_a_parameter_is_refused_as_torch():
    lin = nn.Linear(2, 3)
    with pytest.raises(TypeError, match="as parameter 'weight'"):
        lin.weight = mt.Tensor(np.zeros((2, 3), np.float32), requires_grad=True)
    lin.weight = nn.Parameter(np.zeros((2, 3), np.float32))  # a Parameter is fine
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]


def test_deepcopy_after_backward_gives_the_copy_its_own_gradients_and_models_pickle():
    model, x = nn.Linear(3, 1), mt.Tensor(np.ones((2, 3), np.float32))
    loss = (model(x) ** 2).mean()
    loss.backward()
    copied = copy.deepcopy(model)
    model.zero_grad()
    copied.zero_grad()
    (copied(x) ** 2).mean().backward()
    assert model.weight.grad is None, "expected the original's gradient untouched"
    assert copied.weight.grad is not None
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.weight.data, model.weight.data)


def test_cross_entropy_refuses_class_weights_in_ignore_indexs_place():
    z, t = mt.Tensor(rng.standard_normal((3, 3)).astype(np.float32)), np.array([0, 1, 2])
    with pytest.raises(TypeError, match="ignore_index must be an int"):
        F.cross_entropy(z, t, np.array([1.0, 2.0, 0.5], np.float32))


def test_torchs_positional_arguments_mean_the_same():
    layer = nn.TransformerDecoderLayer(8, 2, 16, 0.1, "relu", 1e-5, True)  # batch_first=True
    assert layer.norm_first is False, "the 7th argument is batch_first, as torch"
    start = rng.standard_normal(4).astype(np.float32)
    grads = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
    p, tp = nn.Parameter(start.copy()), torch.nn.Parameter(torch.tensor(start))
    opt, topt = nn.optim.SGD([p], 0.1, 0.9, 0.5), torch.optim.SGD([tp], 0.1, 0.9, 0.5)
    for g in grads:
        p.grad, tp.grad = g.copy(), torch.tensor(g)
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-6,
                               err_msg="SGD(params, lr, momentum, dampening) as torch")
    p, tp = nn.Parameter(start.copy()), torch.nn.Parameter(torch.tensor(start))
    opt = nn.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    topt = torch.optim.SGD([tp], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    for g in grads:
        p.grad, tp.grad = g.copy(), torch.tensor(g)
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-6, err_msg="nesterov")


def test_layer_norm_refuses_a_weight_of_another_shape_as_torch():
    x = mt.Tensor(np.arange(12.0).reshape(2, 3, 2))
    with pytest.raises(ValueError, match="weight has shape"):
        F.layer_norm(x, (3, 2), weight=mt.Tensor(np.ones(6)))
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(x, ())


@pytest.mark.parametrize("bad", [
    lambda: mt.randn(5, dtype=np.int64), lambda: nn.MultiHeadAttention(8, 0),
    lambda: nn.scaled_dot_product_attention(mt.Tensor(np.ones(4)), mt.Tensor(np.ones((3, 4))),
                                            mt.Tensor(np.ones((3, 4))))])
def test_meaningless_arguments_get_a_one_line_error(bad):
    with pytest.raises((TypeError, ValueError)) as error:
        bad()
    assert "\n" not in str(error.value)


def test_reshape_takes_a_shape_given_as_an_array():
    assert mt.Tensor(np.ones(6)).reshape(np.array([2, 3])).shape == (2, 3)


def test_cat_of_one_tensor_is_refused_as_torch():
    with pytest.raises(TypeError, match="sequence of tensors"):
        mt.cat(mt.Tensor(np.ones((3, 2))))


def test_a_module_holding_itself_lists_each_module_once():
    m = nn.Linear(2, 2)
    m.me = m
    assert [n for n, _ in m.named_modules()] == [""]
    assert len(m.parameters()) == 2


def test_layer_norm_takes_torchs_third_argument_elementwise_affine():
    ours, theirs = nn.LayerNorm(4, 1e-5, False), torch.nn.LayerNorm(4, 1e-5, False)
    assert ours.weight is None and ours.bias is None and theirs.weight is None
    assert len(ours.parameters()) == 0
    x = rng.standard_normal((2, 4))
    np.testing.assert_allclose(ours(mt.Tensor(x)).data, theirs(torch.tensor(x)).numpy(),
                               rtol=1e-10)


def test_zero_grad_takes_torchs_set_to_none():
    lin = nn.Linear(2, 1)
    opt = nn.optim.SGD(lin.parameters(), lr=0.1)
    (lin(mt.Tensor(np.ones((1, 2), np.float32))) ** 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert (lin.weight.grad == 0).all(), "expected zeros kept"
    lin.zero_grad()
    assert lin.weight.grad is None


# ---- issue 25, the optimizer and module findings -------------------------------------------
def test_issue25_1_sgd_step_between_forward_and_backward_refuses_instead_of_using_the_new_w():
    w = nn.Parameter([1.0, 2.0])
    loss = (w * w).sum()
    w.grad = np.array([1.0, 1.0], np.float32)  # w's dtype: torch refuses any other
    nn.optim.SGD([w], lr=0.5).step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()  # before the fix: [1, 3], twice the updated w


def test_issue25_1_load_state_dict_between_forward_and_backward_refuses():
    m = nn.Linear(2, 1)
    x = mt.Tensor(np.ones((1, 2), np.float32), requires_grad=True)
    loss = m(x).sum()
    m.load_state_dict({"weight": np.zeros((2, 1)), "bias": np.zeros(1)})
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_issue25_2_adamw_on_a_0_dim_parameter_keeps_moving_after_a_state_round_trip():
    # g = 1 every step, lr 0.1, no decay: after 4 steps m = 1 − 0.9⁴ = 0.3439 and
    # v = 1 − 0.999⁴ = 0.003994 (hand calculation; torch gives the same)
    p = nn.Parameter(np.array(1.0))
    opt = nn.optim.AdamW([p], lr=0.1, weight_decay=0.0)
    p.grad = np.array(1.0)
    opt.step()
    opt.load_state_dict(opt.state_dict())
    for _ in range(3):
        p.grad = np.array(1.0)
        opt.step()
    state = opt.state[p]
    assert isinstance(state["exp_avg"], np.ndarray) and state["exp_avg"].shape == (), (
        f"expected a 0-d array exp_avg, got {type(state['exp_avg']).__name__}")
    assert math.isclose(state["exp_avg"], 1 - 0.9 ** 4, rel_tol=1e-12), (
        f"expected exp_avg 0.3439, got {state['exp_avg']}")  # before the fix: 0.1
    assert math.isclose(state["exp_avg_sq"], 1 - 0.999 ** 4, rel_tol=1e-12), (
        f"expected exp_avg_sq 0.003994, got {state['exp_avg_sq']}")


def test_issue25_2_sgd_momentum_buffer_of_a_0_dim_parameter_is_an_array_after_loading():
    p = nn.Parameter(np.array(1.0))
    opt = nn.optim.SGD([p], lr=0.1, momentum=0.5)
    p.grad = np.array(2.0)
    opt.step()  # b = 2, p = 0.8
    fresh = nn.optim.SGD([p], lr=0.1, momentum=0.5)
    fresh.load_state_dict(opt.state_dict())
    p.grad = np.array(2.0)
    fresh.step()  # b = 0.5·2 + 2 = 3, p = 0.8 − 0.3 = 0.5
    buf = fresh.state[p]["momentum_buffer"]
    assert isinstance(buf, np.ndarray) and buf.shape == () and buf == 3.0, (
        f"expected a 0-d array buffer 3.0, got {buf!r}")
    assert math.isclose(float(p.data), 0.5), f"expected p = 0.5, got {p.data}"


def test_issue25_4_clip_grad_norm_0_counts_the_non_zero_norms_and_scales_by_its_inverse():
    # torch: the 0-"norm" of each gradient counts its non-zeros (4, 2); the total is the
    # 0-norm of those, 2 (neither is zero); the gradients are scaled by 1 / (2 + 1e-6)
    a, b = nn.Parameter(np.zeros((2, 3))), nn.Parameter(np.zeros(2))
    a.grad = np.array([[0.0, 1, -2], [3, 0, 4]])
    b.grad = np.array([5.0, -6])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0, norm_type=0)
    assert total == 2.0, f"expected 2 (torch), got {total}"  # before the fix: 32
    np.testing.assert_allclose(b.grad, np.array([5.0, -6]) / (2 + 1e-6), rtol=1e-12,
                               err_msg="expected the gradients scaled by 1 / 2")


@pytest.mark.parametrize("mode", ["False", 0, 1, None, 1.0, np.bool_(True)])
def test_issue25_12a_train_with_a_mode_that_is_not_a_bool_is_refused_as_torch(mode):
    m = nn.Dropout(0.5)
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(mode)  # before the fix: "False" kept dropout on
    assert m.training is True, "a refused train() must leave the mode as it was"


@pytest.mark.parametrize("flag", ["False", 0, None])
def test_issue25_12a_module_requires_grad_with_a_flag_that_is_not_a_bool_is_refused(flag):
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="must be bool"):
        m.requires_grad_(flag)
    assert m.weight.requires_grad, "a refused requires_grad_ must leave the parameters as they were"


def test_module_requires_grad_false_freezes_every_parameter_and_returns_the_module():
    m = nn.Linear(2, 2)
    assert m.requires_grad_(False) is m
    assert not any(p.requires_grad for p in m.parameters()), "expected every parameter frozen"
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters()), "expected every parameter trainable"
