"""Every write the library makes into a tensor's array goes through `microtensor.writing`, which
counts a version, so a graph that saved the old values refuses backward, as torch (issue 25 #1).

Two halves: an AST scan of nn/, models/ and viz/ that finds any other write into `<expr>.data`
(it names file:line), and one behavioural test per writer (optimizer steps, load_state_dict,
initialisers; clip_grad_norm_ writes gradients only, which no graph saved).
"""
import ast
from pathlib import Path

import numpy as np
import pytest

import nn
from microtensor import Tensor

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("nn", "models", "viz")
# ndarray methods that write into the array they are called on
IN_PLACE_METHODS = {"fill", "sort", "put", "itemset", "resize", "setfield", "partition",
                    "byteswap", "setflags"}
REBIND_MARK = "# rebinds"  # `p.data = fresh` binds a new array (torch's .data =): no write


def _is_data(node):
    """True for `<expr>.data` or a subscript/view of it (`x.data[...]`, `x.data[0][1]`)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "data"


def _unpacked(targets):
    """The assignment targets, with `a, (b, *c) = ...` unpacked (not walked into: the `.data`
    of `x.data[0] = ...` is read, not rebound)."""
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _unpacked(target.elts)
        elif isinstance(target, ast.Starred):
            yield from _unpacked([target.value])
        else:
            yield target


def _writes(tree, lines):
    """(line, what) for each write into `<expr>.data` the tree holds."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and _is_data(node.target):
            yield node.lineno, "augmented assignment into .data"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in _unpacked(targets):
                if isinstance(target, ast.Subscript) and _is_data(target):
                    yield node.lineno, "subscript assignment into .data"
                elif (isinstance(target, ast.Attribute) and target.attr == "data"
                      and REBIND_MARK not in lines[node.lineno - 1]):
                    yield node.lineno, (f"rebinding .data without a '{REBIND_MARK}: why' "
                                        "comment")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "copyto" and node.args and _is_data(node.args[0]):
                yield node.lineno, "np.copyto into .data"
            if any(k.arg == "out" and any(_is_data(e) for e in ast.walk(k.value))
                   for k in node.keywords):
                yield node.lineno, "out= into .data"
            if (isinstance(func, ast.Attribute) and name in IN_PLACE_METHODS
                    and _is_data(func.value)):
                yield node.lineno, f".data.{name}() writes in place"


def _scan(source, filename="<test>"):
    return list(_writes(ast.parse(source, filename), source.splitlines()))


@pytest.mark.parametrize("source", [
    "p.data -= lr * g", "p.data[...] = 0", "p.data[0][1] = 2", "np.copyto(m.w.data, a)",
    "np.add(a, b, out=p.data)", "np.add(a, b, out=p.data[1:])", "p.data.fill(0)",
    "p.data = a", "a, p.data[0] = 1, 2"])
def test_the_scan_finds_each_form_of_write_into_data(source):
    assert _scan(source), f"expected the scan to flag {source!r}, it found nothing"


@pytest.mark.parametrize("source", [
    "x = p.data[0]", "np.add(p.data, 1, out=tmp)", "with writing(p) as d:\n    d -= 1",
    "p.data = a  # rebinds: fresh float64 weights", "args.data", "y = f(p.data)"])
def test_the_scan_leaves_reads_and_counted_writes_alone(source):
    assert _scan(source) == [], f"expected no write in {source!r}, got {_scan(source)}"


def test_no_file_of_nn_models_or_viz_writes_into_a_tensors_data_outside_writing():
    found = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(ROOT)}:{line}: {what}"
                      for line, what in _writes(ast.parse(source, str(path)),
                                                source.splitlines())]
    assert not found, ("writes into a tensor's .data that bypass microtensor.writing (no "
                       "version counted; use `with writing(t) as data: ...`):\n"
                       + "\n".join(found))


# ---- behaviour: each writer bumps the version a saved graph checks ---------------------------
def _saved_graph():
    w = nn.Parameter(np.array([1.0, 2.0]))
    loss = (w * w).sum()  # saves w for backward: ∂/∂w = 2w of the w it saw
    return w, loss


@pytest.mark.parametrize("make", [
    lambda w: nn.optim.SGD([w], lr=0.5), lambda w: nn.optim.SGD([w], lr=0.5, momentum=0.9),
    lambda w: nn.optim.AdamW([w], lr=0.5), lambda w: nn.optim.AdamW([w], weight_decay=0.0)],
    ids=["SGD", "SGD-momentum", "AdamW", "AdamW-no-decay"])
def test_an_optimizer_step_between_forward_and_backward_makes_backward_refuse(make):
    w, loss = _saved_graph()
    w.grad = np.array([1.0, 1.0])
    make(w).step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()  # before: silently 2·(updated w), e.g. [1, 3] for SGD lr 0.5


def test_load_state_dict_between_forward_and_backward_makes_backward_refuse():
    model = nn.Linear(2, 1)
    x = Tensor(np.ones((1, 2), np.float32), requires_grad=True)
    loss = model(x).sum()  # x @ weight saves weight for ∂/∂x
    model.load_state_dict({k: v + 1 for k, v in model.state_dict().items()})
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_load_state_dict_still_copies_in_place_so_an_optimizer_keeps_its_parameter():
    model = nn.Linear(2, 1)
    weight = model.weight
    array = weight.data
    model.load_state_dict({"weight": np.full((2, 1), 3.0), "bias": np.zeros(1)})
    assert model.weight is weight and weight.data is array and (array == 3).all(), (
        f"expected the same Parameter and array holding 3s, got {weight.data.ravel()}")


def test_gpt2_initialisation_between_forward_and_backward_makes_backward_refuse():
    from models.gpt import init_gpt2_weights
    model = nn.Linear(2, 2)
    x = Tensor(np.ones((1, 2), np.float32), requires_grad=True)
    loss = model(x).sum()
    init_gpt2_weights(model, n_layer=1)
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_clip_grad_norm_writes_gradients_only_so_a_graph_that_saved_the_weight_still_runs():
    # as torch: clipping scales .grad in place and leaves the parameters' versions alone
    w, loss = _saved_graph()
    w.grad = np.array([30.0, 40.0])
    total = nn.utils.clip_grad_norm_([w], max_norm=1.0)
    assert total == 50.0 and np.allclose(w.grad, [0.6, 0.8]), (
        f"expected norm 50 and grad [0.6, 0.8], got {total}, {w.grad}")
    w.grad = None
    loss.backward()
    assert np.array_equal(w.grad, [2.0, 4.0]), f"expected 2w = [2, 4], got {w.grad}"
