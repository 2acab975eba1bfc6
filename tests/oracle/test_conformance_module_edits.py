"""Sequences of module edits against torch.nn.Module (issue 32: the module tree as torch keeps it).

Each case is a random sequence of edits applied to a microtensor module and a torch module
side by side: set an attribute to None, to a plain value, to a new or a shared Parameter, to a
new or a shared sub-module (shared between names, and between the root and a child), delete
it, on the root or on a child. After every edit the two trees must agree on whether the edit
raised (and its class), and on the order and names of `named_parameters`, `named_children`,
`named_modules` (with and without duplicates), `state_dict`, the calls `apply` makes, and
on `load_state_dict(strict=False)`'s missing and unexpected keys for a state dict with a
key dropped and two foreign keys. Parameters and modules are compared by the label each
pair was made with, so a shared one must be the same object on both sides.

    python -m pytest -s -k module_edits_size tests/oracle/test_conformance_module_edits.py
"""
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nn  # noqa: E402

NAMES = ("a", "b", "c", "w")  # the child has a "w" already
EDITS = ("none", "plain", "new_param", "shared_param", "new_module", "shared_module", "delete")
SEQUENCES = 300
LENGTH = 8


class Leaf(nn.Module):
    def __init__(self, label):
        super().__init__()
        self.label = label
        self.w = nn.Parameter(np.full(2, float(len(label))))


class TorchLeaf(torch.nn.Module):
    def __init__(self, label):
        super().__init__()
        self.label = label
        self.w = torch.nn.Parameter(torch.full((2,), float(len(label))))


def _label(obj):
    return getattr(obj, "label", None) or type(obj).__name__


class Pair:
    """The two trees, and a pool of labelled pairs (parameters, modules) to share."""

    def __init__(self):
        self.ours, self.theirs = nn.Module(), torch.nn.Module()
        self.ours.label = self.theirs.label = "root"
        self.params, self.modules, self.count = [], [], 0
        self.ours.kid, self.theirs.kid = Leaf("kid"), TorchLeaf("kid")  # a child to edit too

    def new_param(self):
        self.count += 1
        label, start = f"p{self.count}", np.full(3, float(self.count))
        ours, theirs = nn.Parameter(start.copy()), torch.nn.Parameter(torch.tensor(start))
        ours.label = theirs.label = label  # attributes on the pair, to compare by identity
        self.params.append((ours, theirs))
        return ours, theirs

    def new_module(self):
        self.count += 1
        pair = (Leaf(f"m{self.count}"), TorchLeaf(f"m{self.count}"))
        self.modules.append(pair)
        return pair


def _apply_edit(pair, rng, where, edit, name):
    """Do the edit on both trees: the exception class each raised, or None."""
    targets = (pair.ours, pair.theirs) if where == "root" else (pair.ours.kid, pair.theirs.kid)
    if edit in ("none", "delete"):
        values = (None, None)
    elif edit == "plain":
        values = (7, 7)
    elif edit == "new_param" or (edit == "shared_param" and not pair.params):
        values = pair.new_param()
    elif edit == "shared_param":
        values = rng.choice(pair.params)
    elif edit == "new_module" or (edit == "shared_module" and not pair.modules):
        values = pair.new_module()
    else:
        values = rng.choice(pair.modules)
    errors = []
    for target, value in zip(targets, values):
        try:
            if edit == "delete":
                delattr(target, name)
            else:
                setattr(target, name, value)
            errors.append(None)
        except Exception as error:  # noqa: BLE001 - compared by class below
            errors.append(type(error))
    return errors


def _view(ours, theirs):
    """What the two trees show, as two comparable structures."""
    def show(module, is_ours):
        calls = []
        module.apply(lambda m: calls.append(_label(m)))
        state = module.state_dict()
        full = dict(state)
        dropped = next(iter(full), None)
        if dropped is not None:
            del full[dropped]
        full["kid.extra"] = full["zz.extra"] = 0  # torch reports them in module order
        loaded = module.load_state_dict(_loadable(full, state, is_ours), strict=False)
        return {
            "named_parameters": [(n, _label(p)) for n, p in module.named_parameters()],
            "named_parameters(dup)": [(n, _label(p)) for n, p in
                                      module.named_parameters(remove_duplicate=False)],
            "parameters": [_label(p) for p in module.parameters()],
            "named_children": [(n, _label(m)) for n, m in module.named_children()],
            "children": [_label(m) for m in module.children()],
            "named_modules": [(n, _label(m)) for n, m in module.named_modules()],
            "named_modules(dup)": [(n, _label(m)) for n, m in
                                   module.named_modules(remove_duplicate=False)],
            "state_dict": list(state),
            "apply": calls,
            "load_state_dict": (list(loaded.missing_keys), list(loaded.unexpected_keys)),
        }
    return show(ours, True), show(theirs, False)


def _loadable(full, state, is_ours):
    """The state dict to load: the tree's own values (copies) with one key dropped and two
    foreign keys added, in that order of keys."""
    out = {}
    for key, value in full.items():
        if key in state:
            out[key] = np.array(value) if is_ours else value.detach().clone()
        else:
            out[key] = np.zeros(1) if is_ours else torch.zeros(1)
    return out


def _run(seed):
    rng = random.Random(seed)
    pair = Pair()
    for step in range(LENGTH):
        where = rng.choice(("root", "root", "kid"))
        edit, name = rng.choice(EDITS), rng.choice(NAMES)
        ours_error, their_error = _apply_edit(pair, rng, where, edit, name)
        said = f"sequence {seed}, edit {step}: {edit} {where}.{name}"
        assert (ours_error is None) == (their_error is None), (
            f"{said}: torch raised {their_error}, we raised {ours_error}")
        if their_error is not None:
            assert issubclass(ours_error, their_error), (
                f"{said}: torch raised {their_error.__name__}, we {ours_error.__name__}")
        ours, theirs = _view(pair.ours, pair.theirs)
        for key in theirs:
            assert ours[key] == theirs[key], (
                f"{said}: {key} expected torch's {theirs[key]}, got {ours[key]}")


@pytest.mark.parametrize("seed", range(SEQUENCES))
def test_a_sequence_of_module_edits_leaves_the_tree_as_torch(seed):
    _run(seed)


def test_conformance_module_edits_size():
    checks = len(_view(nn.Module(), torch.nn.Module())[0]) + 1  # and whether it raised
    print(f"\nmodule edits: {SEQUENCES} sequences of {LENGTH} edits ({len(EDITS)} kinds on "
          f"{len(NAMES)} names, root or child), {checks} checks after each: "
          f"{SEQUENCES * LENGTH} edits, {SEQUENCES * LENGTH * checks} comparisons")
    assert SEQUENCES * LENGTH >= 2000, "expected a grid of at least 2,000 edits"
