"""state_dict, load_state_dict, the containers and two argument forms, each against torch 2.13:
the silent differences a hunt found (tied names, load's result, shared storage, Sequential's
slice names, cross_entropy's target dtypes, clip_grad_norm_'s "inf"), and the container
protocols around them."""
from collections import OrderedDict

import numpy as np
import pytest

import microtensor as mt
import microtensor.functional as F
import nn
from models.training.checkpoint import load_model_arrays, model_arrays

torch = pytest.importorskip("torch")
tnn = torch.nn
rng = np.random.default_rng(0)


class _Tied:
    """The same model twice: a, b Linear(2, 3) with b.weight tied to a.weight, and a shared
    module c reachable as c and d."""

    @staticmethod
    def build(lib):
        class Tied(lib.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = lib.Linear(2, 3), lib.Linear(2, 3)
                self.b.weight = self.a.weight
                self.c = lib.LayerNorm(3)
                self.d = self.c
        return Tied()


def _names(pairs):
    return [name for name, _ in pairs]


def test_state_dict_lists_a_tied_parameter_and_a_shared_module_under_each_name_as_torch():
    ours, theirs = _Tied.build(nn), _Tied.build(tnn)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == [
        "a.weight", "a.bias", "b.weight", "b.bias", "c.weight", "c.bias", "d.weight", "d.bias"]
    state = ours.state_dict()
    assert np.shares_memory(state["a.weight"], state["b.weight"]), "one tensor, two names"
    for remove in (True, False):
        assert (_names(ours.named_parameters(remove_duplicate=remove))
                == _names(theirs.named_parameters(remove_duplicate=remove))), remove
        assert (_names(ours.named_modules(remove_duplicate=remove))
                == _names(theirs.named_modules(remove_duplicate=remove))), remove
    assert len(ours.parameters()) == len(list(theirs.parameters())) == 5  # shared: once


def test_load_state_dict_reads_each_tied_name_in_order_the_last_winning_as_torch():
    ours, theirs = _Tied.build(nn), _Tied.build(tnn)
    first, second = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    state = {name: rng.standard_normal(tuple(v.shape)) for name, v in theirs.state_dict().items()}
    # our Linear.weight is [in, out], torch's [out, in]
    state["a.weight"], state["b.weight"] = first, second
    theirs.double().load_state_dict({k: torch.tensor(v.T if k.endswith("weight") and k[0] in "ab"
                                                      else v) for k, v in state.items()})
    ours.load_state_dict(state)
    np.testing.assert_array_equal(theirs.a.weight.detach().numpy().T, second)  # torch: b's
    np.testing.assert_array_equal(ours.a.weight.data, second.astype(np.float32))


def test_load_state_dict_returns_torchs_incompatible_keys():
    ours, theirs = nn.Linear(2, 3), tnn.Linear(2, 3)
    got, expected = ours.load_state_dict(ours.state_dict()), theirs.load_state_dict(
        theirs.state_dict())
    assert (repr(got), tuple(got)) == (repr(expected), tuple(expected)) == (
        "<All keys matched successfully>", ([], []))
    mine = {"weight": ours.state_dict()["weight"], "extra": np.zeros(1)}
    yours = {"weight": theirs.state_dict()["weight"], "extra": torch.zeros(1)}
    got, expected = ours.load_state_dict(mine, strict=False), theirs.load_state_dict(
        yours, strict=False)
    assert (got.missing_keys, got.unexpected_keys) == (expected.missing_keys,
                                                        expected.unexpected_keys)
    assert repr(got) == repr(expected) == (
        "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])")


def test_load_state_dict_strict_mismatch_is_torchs_runtime_error_and_a_key_error():
    for lib, state in ((nn, {"weight": np.zeros((2, 3))}), (tnn, {"weight": torch.zeros(3, 2)})):
        with pytest.raises(RuntimeError, match="bias"):
            lib.Linear(2, 3).load_state_dict(state)
    with pytest.raises(KeyError, match="bias"):
        nn.Linear(2, 3).load_state_dict({"weight": np.zeros((2, 3))})


def test_state_dict_shares_the_parameters_storage_as_torch_and_refuses_writes():
    ours, theirs = nn.Linear(2, 1), tnn.Linear(2, 1).double()
    ours.load_state_dict({"weight": theirs.weight.detach().numpy().T.astype(np.float32),
                          "bias": theirs.bias.detach().numpy().astype(np.float32)})
    mine, yours = ours.state_dict(), theirs.state_dict()
    for opt, loss in ((nn.optim.SGD(ours.parameters(), lr=0.5),
                       lambda: ours(mt.Tensor(np.ones((1, 2), np.float32))).sum()),
                      (torch.optim.SGD(theirs.parameters(), lr=0.5),
                       lambda: theirs(torch.ones(1, 2, dtype=torch.float64)).sum())):
        loss().backward()
        opt.step()
    np.testing.assert_allclose(mine["weight"], yours["weight"].numpy().T, rtol=1e-6)
    np.testing.assert_array_equal(mine["weight"], ours.weight.data)  # the step shows
    with pytest.raises(ValueError, match="read-only"):
        mine["weight"][...] = 7.0  # torch's would write into the model; here refused


def test_state_dict_prefix_keep_vars_and_named_parameters_prefix_recurse_as_torch():
    ours = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Linear(1, 1)))
    theirs = tnn.Sequential(tnn.Linear(1, 1), tnn.Sequential(tnn.Linear(1, 1)))
    assert list(ours.state_dict(prefix="m.")) == list(theirs.state_dict(prefix="m."))
    assert all(isinstance(v, nn.Parameter) for v in ours.state_dict(keep_vars=True).values())
    for kwargs in ({"prefix": "a"}, {"recurse": False}, {"prefix": "a", "recurse": True}):
        assert (_names(ours[1].named_parameters(**kwargs))
                == _names(theirs[1].named_parameters(**kwargs))), kwargs
    assert len(ours.parameters(recurse=False)) == len(list(theirs.parameters(recurse=False)))


def test_apply_children_and_modules_order_as_torch():
    ours = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU(), nn.Linear(1, 1)))
    theirs = tnn.Sequential(tnn.Linear(1, 1), tnn.Sequential(tnn.ReLU(), tnn.Linear(1, 1)))
    seen = {"ours": [], "theirs": []}
    assert ours.apply(lambda m: seen["ours"].append(type(m).__name__)) is ours
    assert theirs.apply(lambda m: seen["theirs"].append(type(m).__name__)) is theirs
    assert seen["ours"] == seen["theirs"]
    assert ([type(m).__name__ for m in ours.children()]
            == [type(m).__name__ for m in theirs.children()])
    assert ([type(m).__name__ for m in ours.modules()]
            == [type(m).__name__ for m in theirs.modules()])
    assert ours.train() is ours and ours.eval() is ours and not ours[1][0].training


def test_a_module_holding_itself_refuses_state_dict_in_one_line():
    m = nn.Linear(2, 2)
    m.me = m  # torch recurses until RecursionError
    with pytest.raises(ValueError, match="holds itself"):
        m.state_dict()


def test_checkpoint_arrays_of_a_tied_model_hold_it_once_and_load_into_both_names():
    model = _Tied.build(nn)
    arrays = model_arrays(model)
    assert sorted(arrays) == sorted(f"model/{n}" for n, _ in model.named_parameters())
    fresh = _Tied.build(nn)
    load_model_arrays(fresh, {k: np.array(v) for k, v in arrays.items()}, "ckpt")
    for name, array in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[name], array, err_msg=name)
    assert fresh.b.weight is fresh.a.weight


def test_safetensors_numpy_round_trip_of_a_tied_state_dict():
    st = pytest.importorskip("safetensors.numpy")
    model, fresh = _Tied.build(nn), _Tied.build(nn)
    fresh.load_state_dict(st.load(st.save(dict(model.state_dict()))))
    for name, array in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[name], array, err_msg=name)


# ---- the containers ----------------------------------------------------------------------

def _keys(container):
    return [key for key, _ in container.named_children()]


def _twins(kind, n=3):
    ours = [nn.Linear(1, 1) for _ in range(n)]
    theirs = [tnn.Linear(1, 1) for _ in range(n)]
    if kind == "Sequential":
        return nn.Sequential(*ours), tnn.Sequential(*theirs), ours, theirs
    return nn.ModuleList(ours), tnn.ModuleList(theirs), ours, theirs


def _positions(container, entries):
    return [(key, next(i for i, e in enumerate(entries) if e is m))
            for key, m in container.named_children()]


@pytest.mark.parametrize("kind", ["Sequential", "ModuleList"])
@pytest.mark.parametrize("index", [slice(1, None), slice(None, None, 2), slice(None, None, -1),
                                   slice(5, None)])
def test_a_slice_keeps_sequentials_names_and_numbers_a_module_lists_as_torch(kind, index):
    ours, theirs, mine, yours = _twins(kind)
    assert _positions(ours[index], mine) == _positions(theirs[index], yours)
    assert type(ours[index]).__name__ == type(theirs[index]).__name__
    assert list(ours[index].state_dict()) == list(theirs[index].state_dict())


@pytest.mark.parametrize("kind", ["Sequential", "ModuleList"])
@pytest.mark.parametrize("action", ["del 0", "del -1", "del 1:", "set 0", "set -1", "pop 1",
                                    "pop -1", "insert 0", "insert 3", "append", "extend"])
def test_editing_a_container_names_its_entries_as_torch(kind, action):
    ours, theirs, mine, yours = _twins(kind)
    verb, _, arg = action.partition(" ")
    index = slice(1, None) if arg == "1:" else int(arg or 0)
    for container, entries, lib in ((ours, mine, nn), (theirs, yours, tnn)):
        new = lib.Linear(1, 1)
        entries.append(new)
        if verb == "del":
            del container[index]
        elif verb == "set":
            container[index] = new
        elif verb == "pop":
            before = list(container)[index]
            assert container.pop(index) is before
        elif verb == "insert":
            container.insert(index, new)
        elif verb == "append":
            assert container.append(new) is container
        else:
            assert container.extend([new]) is container
    assert _positions(ours, mine) == _positions(theirs, yours)


def test_sequential_insert_takes_negative_indices_and_returns_itself_as_torch():
    for index in (-1, -3, 0, 3):
        ours, theirs, mine, yours = _twins("Sequential")
        mine.append(nn.ReLU())
        yours.append(tnn.ReLU())
        assert ours.insert(index, mine[-1]) is ours and theirs.insert(index, yours[-1]) is theirs
        assert _positions(ours, mine) == _positions(theirs, yours), index
    for index in (-5, 4):
        for container, lib in (_twins("Sequential")[0], nn), (_twins("Sequential")[1], tnn):
            with pytest.raises(IndexError):
                container.insert(index, lib.ReLU())


def test_module_list_insert_outside_0_to_len_is_refused_where_torchs_breaks_the_list():
    theirs = tnn.ModuleList([tnn.Linear(1, 1) for _ in range(3)])
    theirs.insert(9, tnn.ReLU())
    assert _keys(theirs) == ["0", "1", "2", "9"]  # torch: theirs[3] is now a KeyError
    with pytest.raises(KeyError):
        tnn.ModuleList([tnn.Linear(1, 1)]).insert(-1, tnn.ReLU())
    for index in (9, -1):
        with pytest.raises(IndexError, match="outside"):
            nn.ModuleList([nn.Linear(1, 1) for _ in range(3)]).insert(index, nn.ReLU())


def test_sequential_from_an_ordered_dict_keeps_its_names_as_torch():
    ours = nn.Sequential(OrderedDict(fc=nn.Linear(1, 1), act=nn.ReLU(), out=nn.Linear(1, 1)))
    theirs = tnn.Sequential(OrderedDict(fc=tnn.Linear(1, 1), act=tnn.ReLU(),
                                        out=tnn.Linear(1, 1)))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert _keys(ours[1:]) == _keys(theirs[1:]) == ["act", "out"]
    ours[0], theirs[0] = nn.Linear(1, 1), tnn.Linear(1, 1)
    assert _keys(ours) == _keys(theirs) == ["fc", "act", "out"]
    ours.append(nn.ReLU())
    theirs.append(tnn.ReLU())
    assert _keys(ours) == _keys(theirs) == ["fc", "act", "out", "3"]
    del ours[1]
    del theirs[1]
    assert _keys(ours) == _keys(theirs) == ["0", "1", "2"]


def test_sequential_append_after_a_slice_is_refused_where_torch_replaces_an_entry():
    theirs = tnn.Sequential(*(tnn.Linear(1, 1) for _ in range(3)))[1:]
    theirs.append(tnn.ReLU())
    assert _keys(theirs) == ["1", "2"] and isinstance(theirs[1], tnn.ReLU)  # a Linear lost
    ours = nn.Sequential(*(nn.Linear(1, 1) for _ in range(3)))[1:]
    with pytest.raises(ValueError, match="already has an entry named '2'"):
        ours.append(nn.ReLU())
    assert _keys(ours) == ["1", "2"] and isinstance(ours[1], nn.Linear)


def test_containers_len_iter_negative_index_and_contains_as_torch():
    ours, theirs, mine, yours = _twins("ModuleList")
    assert len(ours) == len(theirs) == 3
    assert [mine.index(m) for m in ours] == [yours.index(m) for m in theirs]
    assert mine.index(ours[-1]) == yours.index(theirs[-1]) == 2
    assert (mine[1] in ours, nn.Linear(1, 1) in ours) == (yours[1] in theirs,
                                                          tnn.Linear(1, 1) in theirs)
    for container in (ours, theirs):
        with pytest.raises(IndexError):
            container[-4]


# ---- cross_entropy's targets and clip_grad_norm_'s norm_type -------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_cross_entropy_takes_the_target_dtypes_torch_takes(dtype):
    logits, targets = rng.standard_normal((3, 4)), np.array([0, 3, 1], dtype=dtype)
    try:
        expected = torch.nn.functional.cross_entropy(torch.tensor(logits),
                                                     torch.from_numpy(targets)).item()
    except RuntimeError:
        with pytest.raises(TypeError, match=f"got {dtype}"):
            F.cross_entropy(mt.Tensor(logits), targets)
        return
    got = F.cross_entropy(mt.Tensor(logits), targets).item()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("norm_type", ["inf", "Inf", "-inf", "infinity", "2", " 3 ", "0.5", "nan"])
def test_clip_grad_norm_reads_norm_type_strings_as_torch(norm_type):
    g = np.array([1.0, -3.0, 2.0])
    ours, theirs = nn.Parameter(np.ones(3)), torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    ours.grad, theirs.grad = g.copy(), torch.tensor(g)
    got = nn.utils.clip_grad_norm_([ours], 1.0, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_([theirs], 1.0, norm_type=norm_type).item()
    np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("norm_type", ["fro", "nuc", ""])
def test_clip_grad_norm_refuses_a_norm_type_string_torch_refuses(norm_type):
    p, q = nn.Parameter(np.ones(3)), torch.nn.Parameter(torch.ones(3))
    p.grad, q.grad = np.ones(3), torch.ones(3)
    with pytest.raises(ValueError):
        torch.nn.utils.clip_grad_norm_([q], 1.0, norm_type=norm_type)
    with pytest.raises(ValueError, match="norm_type"):
        nn.utils.clip_grad_norm_([p], 1.0, norm_type=norm_type)


def test_named_modules_memo_holds_modules_and_module_list_of_none_is_empty_as_torch():
    ours = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
    theirs = tnn.Sequential(tnn.Linear(1, 1), tnn.Sequential(tnn.ReLU()))
    assert (_names(ours.named_modules(memo={ours[1]}))
            == _names(theirs.named_modules(memo={theirs[1]})) == ["", "0"])
    assert len(nn.ModuleList(None)) == len(tnn.ModuleList(None)) == 0


def test_load_state_dict_shape_mismatch_is_torchs_runtime_error_and_a_value_error():
    for lib, bad in ((nn, np.zeros((3, 3))), (tnn, torch.zeros(3, 3))):
        model = lib.Linear(2, 2)
        with pytest.raises(RuntimeError, match="weight"):
            model.load_state_dict({"weight": bad, "bias": np.ones(2) if lib is nn
                                   else torch.ones(2)})
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        nn.Linear(2, 2).load_state_dict({"weight": np.zeros((3, 3)), "bias": np.ones(2)})
