"""The module tree as torch keeps it (issue 32, findings 3, 4, 5, 7 and load_state_dict's
int64): three ordered registries, shared modules visited once, reports in module order, a
Parameter sharing the storage of the tensor it wraps. Each is compared with torch.nn."""
from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import microtensor as mt  # noqa: E402
import nn  # noqa: E402


def _b_none_then_w_then_b(module_cls, parameter):
    class M(module_cls):
        def __init__(self):
            super().__init__()
            self.b = None
            self.w = parameter(np.ones(2))
            self.b = parameter(np.zeros(2))
    return M()


def test_a_name_set_to_none_first_is_registered_when_it_becomes_a_parameter_as_torch():
    ours = _b_none_then_w_then_b(nn.Module, nn.Parameter)
    theirs = _b_none_then_w_then_b(torch.nn.Module,
                                   lambda a: torch.nn.Parameter(torch.tensor(a)))
    want = [n for n, _ in theirs.named_parameters()]
    assert want == ["w", "b"]
    assert [n for n, _ in ours.named_parameters()] == want, "expected torch's order w, b"
    assert list(ours.state_dict()) == list(theirs.state_dict())
    # so the optimizer's groups (parameters()) come in torch's order too
    assert [p.shape for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    assert ours.parameters()[0] is ours.w


def test_re_assigning_a_registered_name_keeps_its_place_and_deleting_it_moves_it_last():
    want = None
    for module_cls, parameter, linear in ((torch.nn.Module, lambda a: torch.nn.Parameter(
                                              torch.tensor(a)), torch.nn.Linear),
                                          (nn.Module, nn.Parameter, nn.Linear)):
        m = module_cls()
        m.a, m.b, m.fc = parameter(np.ones(1)), parameter(np.ones(2)), linear(2, 2)
        m.a = parameter(np.ones(3))  # re-assigned: stays first
        del m.b
        m.b = parameter(np.ones(4))  # deleted, then set again: last
        m.fc = None  # a module name set to None stays registered, listed nowhere
        m.fc = parameter(np.ones(5))  # a module's name becomes a parameter's
        names = [(n, tuple(p.shape)) for n, p in m.named_parameters()]
        if want is None:
            want = names  # torch's: [("a", (3,)), ("b", (4,)), ("fc", (5,))]
        else:
            assert names == want, f"expected torch's {want}, got {names}"
    assert not list(m.children())


def test_load_state_dict_reports_unexpected_keys_in_module_order_as_torch():
    ours, theirs = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)), torch.nn.Sequential(
        torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    extra = OrderedDict([("1.extra", np.zeros(1)), ("0.extra", np.zeros(1)),
                         ("top", np.zeros(1))])
    got = ours.load_state_dict({**ours.state_dict(), **extra}, strict=False)
    want = theirs.load_state_dict({**theirs.state_dict(),
                                   **{k: torch.tensor(v) for k, v in extra.items()}},
                                  strict=False)
    assert want.unexpected_keys == ["top", "0.extra", "1.extra"]
    assert got.unexpected_keys == want.unexpected_keys, (
        f"expected torch's module order {want.unexpected_keys}, got {got.unexpected_keys}")
    assert got.missing_keys == want.missing_keys == []


def test_a_module_shared_in_two_places_is_one_child_and_apply_visits_it_once_as_torch():
    ours_l, theirs_l = nn.Linear(2, 2), torch.nn.Linear(2, 2)
    ours, theirs = nn.Sequential(ours_l, ours_l), torch.nn.Sequential(theirs_l, theirs_l)
    assert [n for n, _ in theirs.named_children()] == ["0"]
    assert [n for n, _ in ours.named_children()] == ["0"], "expected torch's ['0']"
    assert len(list(ours.children())) == len(list(theirs.children())) == 1
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert len(ours) == len(theirs) == 2  # the Sequential still runs it twice
    ours_l.weight.data[...] = 1.0
    with torch.no_grad():
        theirs_l.weight.fill_(1.0)

    def halve(m):
        if isinstance(m, (nn.Linear, torch.nn.Linear)):
            with torch.no_grad():
                if isinstance(m, torch.nn.Linear):
                    m.weight.mul_(0.5)
                else:
                    m.weight.data *= 0.5
    ours.apply(halve)
    theirs.apply(halve)
    assert theirs_l.weight[0, 0].item() == 0.5
    assert ours_l.weight.data[0, 0] == 0.5, (
        f"expected an init applied once (0.5, as torch), got {ours_l.weight.data[0, 0]}")


def test_a_parameter_shares_the_storage_of_the_tensor_it_wraps_as_torch():
    t, tt = mt.Tensor(np.ones(3)), torch.ones(3, dtype=torch.float64)
    p, tp = nn.Parameter(t), torch.nn.Parameter(tt)
    p.grad, tp.grad = np.ones(3), torch.ones(3, dtype=torch.float64)
    nn.optim.SGD([p], lr=0.25).step()
    torch.optim.SGD([tp], lr=0.25).step()
    assert tt.tolist() == [0.75] * 3
    assert t.data.tolist() == tt.tolist(), (
        f"expected the step seen through the wrapped tensor (torch's {tt.tolist()}), got "
        f"{t.data.tolist()}")
    assert p.dtype == t.dtype and p.is_leaf and p.requires_grad and not t.requires_grad
    a = np.ones(2)
    assert not np.shares_memory(nn.Parameter(a).data, a), "from an array: a copy, as Tensor"


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_load_state_dict_casts_integer_and_bool_arrays_as_torch(dtype):
    ours, theirs = nn.Linear(2, 3), torch.nn.Linear(2, 3)
    values = {"weight": np.arange(6).reshape(2, 3).astype(dtype),
              "bias": np.arange(3).astype(dtype)}
    ours.load_state_dict(values)
    theirs.load_state_dict({"weight": torch.from_numpy(values["weight"].T.copy()),
                            "bias": torch.from_numpy(values["bias"])})
    assert ours.weight.dtype == np.float32
    np.testing.assert_array_equal(ours.weight.data, theirs.weight.detach().numpy().T,
                                  err_msg="expected torch's cast values")
    np.testing.assert_array_equal(ours.bias.data, theirs.bias.detach().numpy())


def test_buffers_are_saved_loaded_and_not_learned_as_torch():
    ours, theirs = nn.Module(), torch.nn.Module()
    ours.w, theirs.w = nn.Parameter(np.ones(2)), torch.nn.Parameter(torch.ones(2))
    ours.register_buffer("running", mt.Tensor(np.zeros(2)))
    theirs.register_buffer("running", torch.zeros(2))
    ours.register_buffer("scratch", mt.Tensor(np.zeros(1)), persistent=False)
    theirs.register_buffer("scratch", torch.zeros(1), persistent=False)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["w", "running"]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert len(ours.parameters()) == 1
    ours.load_state_dict({"w": np.ones(2), "running": np.full(2, 3.0)})
    assert ours.running.data.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="buffer 'running'"):
        ours.running = 3
