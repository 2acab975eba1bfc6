"""The conformance grid's Python numbers out of a dtype's range (issue 32): every elementwise
operator, its reflected and in-place forms, item assignment and masked_fill, on uint8, int8,
int16, int32, int64, bool, float16 and float32 tensors, with Python ints at and past each
dtype's limits (and floats past float16's and float32's), against PyTorch 2.13.

torch wraps an int operand into the result's dtype (`uint8 + 300` adds 44) and refuses one it
must store that does not fit (`u8[0] = 300`); each case compares whether an error is raised,
and the values and dtype exactly. `python -m pytest -s -k int_ranges_size tests/oracle` prints
the count.
"""
import operator
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import microtensor as mt  # noqa: E402

VALUES = {"uint8": [0, 1, 250], "int8": [-128, -2, 127], "int16": [-3, 0, 32767],
          "int32": [-5, 7, 2**31 - 1], "int64": [-1, 2, 2**62], "bool": [True, False, True],
          "float16": [0.5, -2.0, 60000.0], "float32": [1.5, -2.5, 3e38]}
NUMBERS = [-2**63, -2**31 - 1, -32769, -129, -128, -1, 0, 1, 127, 128, 255, 256, 300, 32768,
           2**31, 2**63 - 1, 2**63, 2**64, -2**63 - 1, 70000.0, 1e39, -1e300, True]
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
             "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
             ">": operator.gt, ">=": operator.ge, "&": operator.and_, "|": operator.or_,
             "^": operator.xor}
IN_PLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul}


def _forms():
    forms = [("op", s) for s in OPERATORS] + [("reflected", s) for s in OPERATORS]
    return forms + [("in-place", s) for s in IN_PLACE] + [("setitem", "[0] ="),
                                                          ("masked_fill", "masked_fill")]


def _call(kind, symbol, x, number, lib):
    if kind == "op":
        return OPERATORS[symbol](x, number)
    if kind == "reflected":
        return OPERATORS[symbol](number, x)
    if kind == "in-place":
        IN_PLACE[symbol](x, number)
        return x
    if kind == "setitem":
        x[0] = number
        return x
    mask = np.array([True, False, True])
    return x.masked_fill(mask if lib is mt else torch.from_numpy(mask), number)


def _run(kind, symbol, dtype, number, lib):
    data = np.array(VALUES[dtype], dtype=dtype)
    x = mt.Tensor(data) if lib is mt else torch.from_numpy(data.copy())
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = _call(kind, symbol, x, number, lib)
    except Exception as error:  # noqa: BLE001  (the comparison is whether both raise)
        return None, error
    array = out.data if lib is mt else out.numpy()
    return np.array(array), None


CASES = [(kind, symbol, dtype, number) for kind, symbol in _forms() for dtype in VALUES
         for number in NUMBERS]

# Kept on purpose (docs/conformance.md), each with its reason: float16 with a Python number.
KEPT = [
    (lambda kind, symbol, dtype, number: dtype == "float16" and kind == "reflected"
     and symbol == "/",
     "number / x in float16: torch computes number · (1/x) in float16, whose 1/x is subnormal "
     "(2 or 3 digits) for |x| > 16384; here the quotient is rounded once"),
    (lambda kind, symbol, dtype, number: dtype == "float16" and symbol in ("*", "/", "*=")
     and not isinstance(number, bool) and abs(number) > 65504,
     "x * number, x *= number and x / number in float16 with a number past float16's range: "
     "torch keeps the number in float32 (its opmath); here it is rounded to float16, inf"),
]


def _kept(case):
    return any(rule(*case) for rule, _ in KEPT)


def _differs(case):
    ours, our_error = _run(*case, mt)
    theirs, their_error = _run(*case, torch)
    if our_error is not None and "\n" in str(our_error).strip():
        return f"our error is not one line: {our_error}"
    if (our_error is None) != (their_error is None):
        error = our_error or their_error
        return (f"{'we' if our_error else 'torch'} raised {type(error).__name__}: "
                f"{str(error)[:90]}; {'torch' if our_error else 'we'} did not")
    if our_error is not None:
        return None
    if ours.dtype != theirs.dtype or ours.shape != theirs.shape:
        return f"{ours.dtype} {ours.shape} vs torch {theirs.dtype} {theirs.shape}"
    same = np.isclose(ours, theirs, rtol=1e-6, equal_nan=True) if ours.dtype.kind == "f" \
        else ours == theirs
    return None if np.all(same) else f"values {ours} vs torch {theirs}"


@pytest.mark.parametrize("form", _forms(), ids=lambda f: f"{f[0]} {f[1]}")
def test_python_numbers_out_of_a_dtypes_range_behave_as_in_torch(form):
    mismatches = []
    for case in (c for c in CASES if c[:2] == form and not _kept(c)):
        reason = _differs(case)
        if reason:
            mismatches.append(f"{case[2]} {case[1]} {case[3]!r}: {reason}")
    assert not mismatches, (f"expected torch's answers; {len(mismatches)} cases differ:\n"
                            + "\n".join(mismatches[:25]))


def test_int_ranges_size():
    kept = sum(map(_kept, CASES))
    print(f"\nnumbers out of range: {len(CASES)} cases ({len(_forms())} forms, {len(VALUES)} "
          f"dtypes, {len(NUMBERS)} numbers), {kept} kept as differences")
    assert len(CASES) >= 5000, f"expected every form, dtype and number, got {len(CASES)}"
