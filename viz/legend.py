"""The key printed inside every graph picture: what an edge's width and colour, a box's ‖g‖, an
edge's label and each fill colour mean.

It is the graph's own label, an HTML-like Graphviz table, so it travels with the picture
onto a slide and never moves the boxes of the layout.
"""
from html import escape

from .style import FILL, fmt_number

KIND_NAMES = {"param": "parameter", "input": "input", "module": "folded module",
              "attention": "attention step", "residual": "residual add"}


def _scale_table(samples):
    """Sample edges from thinnest to thickest, each over its ‖∂L/∂x‖."""
    bars = "".join(f'<td valign="bottom"><table border="0" cellspacing="0" cellpadding="0"><tr>'
                   f'<td bgcolor="{c}" fixedsize="true" width="40" height="{max(1, round(w))}">'
                   f'</td></tr></table></td>' for _, c, w in samples)
    numbers = "".join(f"<td>{escape(fmt_number(n))}</td>" for n, _, _ in samples)
    return ('<table border="0" cellspacing="2" cellpadding="1">'
            f'<tr><td colspan="{len(samples)}">edge: ‖∂L/∂x‖ sent back along it (log scale)</td>'
            f"</tr><tr>{bars}</tr><tr>{numbers}</tr></table>")


def legend_label(scale, has_grads, direction, kinds, title=None, overlay=None):
    """The HTML-like label (a string "<...>") of the key.

    Args:
        scale: the `GradScale` of the picture's edges.
        has_grads: whether backward() has run (else the key says how to get gradients).
        direction: "forward" (arrows follow the data) or "backward" (they follow the gradient).
        kinds: the node kinds drawn, for the colour swatches ("param", "attention", ...).
        title: a first line, e.g. what the picture shows.
        overlay: the overlay's one-line explanation, if any.
    """
    lines = []
    if title:
        lines.append(f"<b>{escape(title)}</b>")
    if has_grads:
        lines += ["‖g‖ in a box: ‖∂L/∂y‖, the gradient of the box's output y",
                  "a number on an edge: the ‖∂L/∂x‖ it carries (skip or branch of a residual add)"]
    else:
        lines.append("forward graph: run backward() to see gradient norms")
    lines.append("arrows: the way the gradient flows, from the loss back to the inputs"
                 if direction == "backward" else "arrows: the way data flows, forward to the loss")
    if overlay:
        lines.append(escape(overlay))
    text = "".join(f'{line}<br align="left"/>' for line in lines)
    swatches = "".join(f'<td bgcolor="{FILL[k]}" border="1">{escape(name)}</td>'
                       for k, name in KIND_NAMES.items() if k in kinds)
    cells = []
    if has_grads:
        cells.append(f"<td>{_scale_table(scale.samples())}</td>")
    # a cell holds text or a table, not both: the text and the swatches are two rows
    right = f'<tr><td align="left" balign="left">{text}</td></tr>'
    if swatches:
        right += (f'<tr><td align="left"><table border="0" cellspacing="3"><tr>{swatches}</tr>'
                  "</table></td></tr>")
    cells.append(f'<td><table border="0" cellspacing="0">{right}</table></td>')
    return ('<<table border="1" color="#bdbdbd" cellborder="0" cellspacing="4" cellpadding="2">'
            f"<tr>{''.join(cells)}</tr></table>>")
