"""Backprop step by step: one picture per graph node, in the order backward() processes them, saved
as a GIF or a multi-page PDF (course notes 3.8).

Frame k highlights the node backward() is at; every node it has passed shows its
‖∂L/∂y‖ and every edge it has sent a gradient along is drawn with that gradient, while the
nodes still ahead read "‖g‖ ?". The order is backward's own, noted by a backward hook
(`microtensor.hooks.register_backward_hook`), so a class watches the chain rule walk back
through a residual block or an attention layer exactly as the engine runs it.
"""
import contextlib
import io
import os

from microtensor import hooks

from .graph import graph_view, render
from .save import picture_format
from .style import fmt_number
from .trace import record_grad_norms


@contextlib.contextmanager
def record_backward_order():
    """While inside, backward() appends the key of each graph node it processes to the list
    this yields (the keys of `viz.trace`), and notes gradient norms as `record_grad_norms`.

        with viz.record_backward_order() as order:
            loss.backward()
        frames = viz.backprop_frames(loss, order)
    """
    order = []
    with record_grad_norms(), hooks.register_backward_hook(lambda fn, *_: order.append(id(fn))):
        yield order


def _underlying(key):
    """The traced node a view's node stands for: a focus view's stand-in ("in", k) is k."""
    return key[1] if isinstance(key, tuple) and key[0] in ("in", "out") else key


def _step_text(node):
    """What backward does at `node`, for the frame's title."""
    norm = fmt_number(node.grad_norm) if node.grad_norm is not None else "?"
    if node.kind != "op":  # a leaf: AccumulateGrad adds the gradient into .grad
        return f"{node.name or node.kind} receives its gradient, ‖g‖ = {norm}"
    where = f" in {node.module}" if node.module else ""
    return (f"{node.op}{where} has ‖∂L/∂y‖ = {norm} and sends the gradient on to its "
            "inputs (the chain rule)")


def backprop_frames(root, order, *, focus=None, rankdir="TB", size=None, direction="backward"):
    """[graphviz.Digraph], one per drawn node that backward() processed, in that order.

    Args:
        root: the tensor backward() ran from.
        order: the node keys `record_backward_order()` noted.
        focus: draw only the inside of this module ("blocks.0.attn"); its frames are those
            of the nodes inside it.
        rankdir, size: as for `draw_graph`; direction "backward" (the default here) points
            the arrows the way the gradient flows.
    Raises ValueError when no drawn node is in `order` (backward() was not recorded).
    """
    nodes, edges = graph_view(root, focus=focus)
    position = {key: i for i, key in enumerate(order)}
    steps = sorted((k for k in nodes if _underlying(k) in position and nodes[k].kind != "external"),
                   key=lambda k: position[_underlying(k)])
    if not steps:
        raise ValueError("backprop_frames: none of the drawn nodes is in `order`; run backward() "
                         "inside `with viz.record_backward_order() as order:`")
    frames = []
    for i, key in enumerate(steps):
        done = position[_underlying(key)]
        pending = {k for k in nodes if _underlying(k) in position
                   and position[_underlying(k)] > done}
        title = f"backward step {i + 1} of {len(steps)}: " + _step_text(nodes[key])
        frames.append(render(nodes, edges, focus=focus, rankdir=rankdir, size=size,
                             direction=direction, title=title, pending=pending, current=key))
    return frames


def save_animation(frames, path, dpi=96, seconds_per_frame=0.8):
    """Write `frames` (graphviz Digraphs) as an animated .gif or a multi-page .pdf.

    Each frame is rendered to a PNG by Graphviz's `dot` at `dpi` and padded onto a white
    page as large as the largest frame, so nothing jumps in size. Returns the path written.
    Raises ValueError for another suffix or no frames; needs Pillow (matplotlib's own
    dependency).
    """
    from PIL import Image

    fmt = picture_format(path, ("gif", "pdf"))
    if not frames:
        raise ValueError("save_animation: no frames to write")
    images = []
    for frame in frames:
        frame = frame.copy()
        frame.attr(dpi=f"{dpi:g}")
        images.append(Image.open(io.BytesIO(frame.pipe(format="png"))).convert("RGB"))
    width, height = max(im.width for im in images), max(im.height for im in images)
    pages = []
    for im in images:
        page = Image.new("RGB", (width, height), "white")
        page.paste(im, ((width - im.width) // 2, (height - im.height) // 2))
        pages.append(page)
    temp = f"{path}.tmp"
    if fmt == "gif":
        pages[0].save(temp, format="GIF", save_all=True, append_images=pages[1:],
                      duration=round(1000 * seconds_per_frame), loop=0)
    else:
        pages[0].save(temp, format="PDF", save_all=True, append_images=pages[1:], resolution=dpi)
    os.replace(temp, path)
    return path
