"""The forward and backward formula of an op, read from the op's own docstring (microtensor/ops/*.py
writes each op's formula above its code: softmax's `ds = a ⊙ (da − Σ a ⊙ da)`), so the
explorer never keeps a second copy that could drift.

The rule: the first paragraph, of the op class's docstring and then of its module's, that
holds a derivative (∂ or `ds =`). Written "forward;  backward" it splits at the first
semicolon; a paragraph of derivatives alone (LayerNorm's) is the backward formula, and
the forward one is then the docstring's first paragraph, after the module's first one where
only that holds a formula (LayerNorm's class docstring opens with shapes, its module's with
`y = (x − μ)/√(σ² + ε) ⊙ w + b`).
"""
import inspect
import re
import sys

_DERIVATIVE = re.compile(r"∂|\bd[a-z]\w* =")


def _paragraphs(doc):
    text = inspect.cleandoc(doc or "")
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def op_formulas(fn):
    """(forward, backward) formula texts of graph node `fn`'s op ("" where its docstrings
    give none)."""
    cls = type(fn)
    module = sys.modules.get(cls.__module__)
    own, outer = _paragraphs(cls.__doc__), _paragraphs(getattr(module, "__doc__", ""))
    for paragraphs in (own, outer):
        for i, text in enumerate(paragraphs):
            if not _DERIVATIVE.search(text):
                continue
            if ";" in text:
                forward, backward = text.split(";", 1)
                return forward.strip(), backward.strip()
            if i and paragraphs[i - 1].endswith(":"):  # "Backward, with x̂ = ...:" introduces it
                text = paragraphs[i - 1] + " " + text
            return _forward(own, outer), text
    return (own or [""])[0], ""


def _forward(own, outer):
    """The first paragraph of the op's docstring, led by its module's where only that one is a
    formula (holds "=")."""
    first = (own or outer or [""])[0]
    if "=" not in first and outer and "=" in outer[0]:
        return outer[0] + " " + first
    return first
