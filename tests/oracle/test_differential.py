"""Differential test: random graphs of ops give PyTorch's values, dtypes and gradients (issue 7).

Each seed is one graph from `oracle_graphs.make_case`: one to six ops drawn from every op of
the public API (broadcasting both ways, reductions over tuples of axes, views, every kind of
numpy index, matmul of every rank, the nn ops, int/bool/float mixes with scalars, ±inf,
NaN, zero-size inputs, a tensor used twice). We compare, after every step, the dtype, the
shape and the values, then backpropagate one random upstream gradient from the last step and
compare the gradient of every input.
Tolerances: float64 values rtol 1e-9, gradients rtol 1e-7 (atol 1e-12 and 1e-10, for entries
that cancel to about 0); float32 graphs rtol 1e-4 and 1e-3. NaN must match NaN, ±inf the same inf.
Differences by design are excluded where they are drawn, in oracle_graphs.py.
"""
import collections

import numpy as np
import pytest

# oracle_graphs imports torch only when a graph runs, so it may come before the skip
from oracle_graphs import OPS, make_case, run_torch

torch = pytest.importorskip("torch")

# numpy warns (not an error state) on the mean of a zero-size input; PyTorch's NaN is expected
pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")

N_CASES = 1000
FAILURES_SHOWN = 5
TOLERANCES = {np.float64: {"value": (1e-9, 1e-12), "grad": (1e-7, 1e-10)},  # (rtol, atol)
              np.float32: {"value": (1e-4, 1e-5), "grad": (1e-3, 1e-4)}}


def _mismatch(what, ours, theirs, tolerance):
    """A message if the arrays differ in shape or value (NaN = NaN), else None."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        return f"{what}: shape {ours.shape}, PyTorch {theirs.shape}"
    rtol, atol = tolerance
    with np.errstate(invalid="ignore"):
        same = np.isclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
    if same.all():
        return None
    bad = np.argwhere(~same)[0] if ours.ndim else ()
    return (f"{what}: ours {ours[tuple(bad)]!r}, PyTorch {theirs[tuple(bad)]!r} "
            f"at {tuple(int(i) for i in bad)} (rtol {rtol}, atol {atol})")


def compare(case):
    """Every difference between our run of `case` and PyTorch's, as messages."""
    tol = TOLERANCES[case.dtype]
    with np.errstate(all="ignore"):
        t_leaves, t_values, error = run_torch(case)
    problems = [error] if error else []
    for j, ((name, _, _), ours, theirs) in enumerate(zip(case.steps, case.values, t_values)):
        t_array = theirs.detach().numpy()
        if ours.dtype != t_array.dtype:
            problems.append(f"step {j} {name}: dtype {ours.dtype}, PyTorch {t_array.dtype}")
        elif (p := _mismatch(f"step {j} {name}: value", ours.data, t_array, tol["value"])):
            problems.append(p)
    if error:
        return problems
    out, t_out = case.values[-1], t_values[-1]
    if out.requires_grad != t_out.requires_grad:
        problems.append(f"output requires_grad {out.requires_grad}, PyTorch {t_out.requires_grad}")
    elif out.requires_grad:
        upstream = np.random.default_rng(case.seed).standard_normal(out.shape).astype(out.dtype)
        with np.errstate(all="ignore"):
            try:
                out.backward(upstream)
            except Exception as error:  # noqa: BLE001  (reported as a difference, with the graph)
                return problems + [f"our backward raised {error!r}"]
            t_out.backward(torch.from_numpy(upstream))
        for i, (leaf, t_leaf) in enumerate(zip(case.mt_leaves, t_leaves)):
            if not leaf.requires_grad:
                continue
            t_grad = None if t_leaf.grad is None else t_leaf.grad.numpy()
            if (leaf.grad is None) != (t_grad is None):
                problems.append(f"input {i}: grad {leaf.grad}, PyTorch {t_grad}")
            elif leaf.grad is not None:
                if leaf.grad.dtype != t_grad.dtype:
                    problems.append(f"input {i}: grad dtype {leaf.grad.dtype}, "
                                    f"PyTorch {t_grad.dtype}")
                elif (p := _mismatch(f"input {i}: gradient", leaf.grad, t_grad, tol["grad"])):
                    problems.append(p)
    return problems


def _describe(case):
    steps = "\n".join(f"  {name} {refs} {params}" for name, refs, params in case.steps)
    leaves = "\n".join(f"  leaf {i}: {a.dtype} {a.shape} requires_grad={g}"
                       for i, (a, g) in enumerate(case.leaves))
    return f"seed {case.seed}:\n{leaves}\n{steps}"


@pytest.fixture(scope="module")
def cases():
    return [make_case(seed) for seed in range(N_CASES)]


def test_random_graphs_match_pytorch_in_value_dtype_and_gradient(cases):
    failures = [f"{_describe(c)}\n  -> " + "\n  -> ".join(p) for c in cases if (p := compare(c))]
    assert not failures, (f"{len(failures)} of {len(cases)} graphs differ from PyTorch; "
                          "first ones:\n" + "\n".join(failures[:FAILURES_SHOWN]))


def test_the_random_graphs_cover_every_op_dtype_and_edge(cases):
    ops = collections.Counter(name for c in cases for name, _, _ in c.steps)
    missing = sorted(set(OPS) - set(ops))
    assert not missing, f"ops never drawn in {len(cases)} graphs: {missing}"
    leaves = [a for c in cases for a, _ in c.leaves]
    dtypes = {a.dtype.name for a in leaves}
    assert dtypes >= {"float32", "float64", "int64", "int32", "bool"}, f"dtypes drawn: {dtypes}"
    assert any(a.size == 0 for a in leaves), "no zero-size input was drawn"
    for special in (np.inf, -np.inf):
        assert any(np.issubdtype(a.dtype, np.floating) and (a == special).any() for a in leaves), (
            f"no input holds {special}")
    assert any(np.issubdtype(a.dtype, np.floating) and np.isnan(a).any() for a in leaves), (
        "no input holds NaN")
    reused = sum(any(refs.count(r) > 1 or any(r in other for _, other, _ in c.steps[:j])
                     for r in refs if r[0] == "step")
                 for c in cases for j, (_, refs, _) in enumerate(c.steps))
    assert reused, "no intermediate was used twice"
