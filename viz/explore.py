"""`explore`: one self-contained HTML file that steps through the forward and backward pass behind a
tensor, node by node in the engine's own order, with each node's formulas, values and gradients
(course notes 3.8; the interactive graph asked for in tinygrad #10809 and PyTorch #34953).

Graphviz lays out every picture when the file is written (`draw_graph`'s own boxes, clusters
and key, as SVG), so the page needs no Graphviz, server or network: plain JavaScript
(viz/explorer/explorer.js, panel.js, marks.js, frame.js) pans, zooms, steps and draws heatmaps
on a canvas. The steps and numbers are those `record_steps()` noted from the engine's hooks.
"""
import html
import json
import os
import re
from pathlib import Path

import numpy as np

from microtensor.autograd import AccumulateGrad

from .compact import summary
from .fold import FoldedNode
from .formulas import op_formulas
from .graph import _number_leaves, graph_view, render
from .layout import forward_order
from .overlay import node_records
from .record import step_record
from .trace import trace
from .views import inside

ASSETS = Path(__file__).with_name("explorer")
MARK = "Written by microtensor's viz.explore"  # page.html's first comment: a page we may replace
MAX_VIEWS = 40  # pictures in one file: the view asked for and the modules that open from it


def _graph_nodes(root):
    """{trace key: graph node object} behind `root` (trace keys are the nodes' ids)."""
    found, stack = {}, [root.grad_fn] if root.grad_fn is not None else []
    while stack:
        fn = stack.pop()
        if id(fn) in found:
            continue
        found[id(fn)] = fn
        stack.extend(p for p in getattr(fn, "inputs", ()) if p is not None)
    return found


def _node_table(root):
    """(keys in table order, [node dict]) for every node the trace of `root` holds."""
    nodes, edges = trace(root)
    _number_leaves(forward_order(nodes, edges))  # "input 1", "input 2", as graph_view numbers them
    fns = _graph_nodes(root)
    costs = node_records(root)
    keys = list(nodes)
    index = {k: i for i, k in enumerate(keys)}
    inputs = {}
    for e in sorted(edges, key=lambda e: e.slot):
        inputs.setdefault(e.dst, []).append((index[e.src], e.grad_norm))
    table, formulas = [], {}
    for key in keys:
        n, fn = nodes[key], fns.get(key)
        record = step_record(fn) if fn is not None else None
        entry = {"kind": n.kind, "op": n.op, "role": n.role, "module": n.module,
                 "name": n.name, "shape": list(n.shape), "saved": {k: list(v) for k, v in
                                                                  n.saved.items()},
                 "inputs": [i for i, _ in inputs.get(key, [])],
                 "sent": [g for _, g in inputs.get(key, [])], "grad_norm": n.grad_norm,
                 "value": record.value if record else None,
                 "grad": record.grad if record else None, "consts": list(n.consts)}
        if n.kind == "const":  # a constant input: its value as the op that read it saw it
            reader = step_record(fns[key[0]]) if key[0] in fns else None
            entry["value"] = reader.inputs.get(key[1]) if reader else None
        if fn is not None:
            entry["dtype"] = str(fn.dtype)
            if isinstance(fn, AccumulateGrad):
                pair = ("", op_formulas(fn)[0])  # what backward does at a leaf
                entry["value"] = summary(fn.variable.data)
                if entry["grad"] is None and fn.variable.grad is not None:
                    entry["grad"] = summary(fn.variable.grad)
            else:
                pair = op_formulas(fn)
            entry["formula"] = formulas.setdefault(pair, len(formulas))
        if key in costs:
            entry["flops"] = costs[key].flops
            entry["saved_bytes"] = sum(nbytes for _, nbytes, _ in costs[key].saved.values())
        entry["forward"] = record.forward if record else None
        entry["backward"] = record.backward if record else None
        table.append(entry)
    return keys, table, [list(p) for p in sorted(formulas, key=formulas.get)]


def _members(view_node, keys, table):
    """Indices of the table's nodes that a view's box stands for (`keys`: trace key -> index)."""
    if view_node.kind == "module":
        paths = ([p for p, _ in view_node.members] if isinstance(view_node, FoldedNode)
                 else [view_node.name])
        return [i for i, t in enumerate(table) if t["kind"] in ("op", "param")
                and any(inside(t["module"], p) for p in paths)]
    key = view_node.key
    key = key[1] if isinstance(key, tuple) and key[0] in ("in", "out") else key
    return [keys[key]] if key in keys else []


def _svg(graph):
    """The picture as inline SVG markup: no XML prolog, no fixed size (the page scales it)."""
    svg = graph.pipe(format="svg").decode("utf-8")
    svg = svg[svg.index("<svg"):]
    return re.sub(r'<svg width="[^"]*" height="[^"]*"', "<svg", svg, count=1)


def _views(root, keys, table, focus, depth, fold, rankdir, direction, title):
    """[view]: the picture asked for first, then every module that opens from a box of it
    (a folded run opens into its blocks, a module box into every op inside it)."""
    views, queue, where = [], [(focus, depth, fold)], {}
    position = {k: i for i, k in enumerate(keys)}
    while queue and len(views) < MAX_VIEWS:
        spec = queue.pop(0)
        if spec in where:
            continue
        where[spec] = len(views)
        nodes, edges = graph_view(root, depth=spec[1], focus=spec[0], fold=spec[2])
        graph = render(nodes, edges, focus=spec[0], rankdir=rankdir, direction=direction,
                       title=title if spec == (focus, depth, fold) else None)
        # a 3-D module box keeps a line of room above its name (Graphviz's default margin set
        # "wte" on the box's top border)
        graph.body = [line.replace("shape=box3d", 'shape=box3d margin="0.11,0.14"')
                      for line in graph.body]
        ids = {key: f"n{i}" for i, key in enumerate(nodes)}  # render's own DOT names
        boxes, opens, parts = {}, {}, {}
        for key, node in nodes.items():
            boxes[ids[key]] = _members(node, position, table)
            if isinstance(node, FoldedNode):  # the blocks of a run, for the progress inside it
                parts[ids[key]] = [p for p, _ in node.members]
            if node.kind == "module":
                child = ((spec[0], spec[1], False) if isinstance(node, FoldedNode)
                         else (node.name, None, True))
                opens[ids[key]] = child
                queue.append(child)
        name = spec[0] or "model"
        label = f"{name} · depth {spec[1]}" if spec[1] else f"{name} · every op"
        views.append({"title": label + ("" if spec[2] or not spec[1] else " · unfolded"),
                      "svg": _svg(graph), "boxes": boxes, "opens": opens, "parts": parts})
    for view in views:
        view["opens"] = {box: where[s] for box, s in view["opens"].items() if s in where}
    return views


INLINE_LIMIT = 3_000_000  # bytes: a larger page is linked from a notebook, not copied into it


class ExplorerPage(str):
    """The path of a written page (a plain str), which Jupyter shows inline.

    The page goes into the notebook's output as an iframe's `srcdoc` (a relative `src` does
    not resolve the same way in Jupyter, JupyterLab and VS Code); a page above INLINE_LIMIT
    bytes is linked instead, to keep the notebook small.
    """

    def _repr_html_(self):
        link = html.escape(os.path.relpath(self).replace(os.sep, "/"))
        if os.path.getsize(self) > INLINE_LIMIT:
            return (f'<a href="{link}" target="_blank">{link}</a>: an explorer page too large to '
                    "show in the notebook; open it in a browser tab")
        with open(self, encoding="utf-8") as f:
            page = html.escape(f.read())
        return (f'<iframe srcdoc="{page}" width="100%" height="720" style="border:0" '
                f'allowfullscreen></iframe><div><a href="{link}" target="_blank">{link}</a></div>')


def explore(root, path, *, depth=None, focus=None, fold=True, rankdir="TB",
            direction="forward", title=None, curves=None):
    """Write the graph behind `root` as one HTML file that steps through forward and backward.

        with viz.record_steps():
            _, loss = model(x, y)
            loss.backward()
        viz.explore(loss, "step.html", depth=1)   # open it in any browser, offline

    Args:
        root: the tensor the forward pass made (usually the loss).
        path: the .html file to write (atomically: a temporary file, then renamed).
        depth, focus, fold, rankdir, direction, title: the first picture, as `draw_graph`'s;
            with `depth`, a module box opens (on a click) into the ops inside it, and a
            folded run of blocks into its blocks. With `focus`, the steps are those of the
            nodes inside that module, in the engine's order.
        curves: optional {"iter": [int], "modules": {path: [‖g‖]}}: gradient-norm curves
            over training, drawn in the side panel (`microtensor train --explore`).
    Returns:
        path, as an `ExplorerPage` (a str): the last line of a notebook cell shows the page
        inline (an iframe of the file next to the notebook).
    Raises:
        ValueError: `path` does not end in .html, the graph's steps were not recorded
            (run forward and backward inside `viz.record_steps()`), or a bad depth/focus.
        RuntimeError: Graphviz's `dot` is missing.
    """
    if not str(path).lower().endswith((".html", ".htm")):
        raise ValueError(f"explore: path must end in .html; got {str(path)!r}")
    if depth is not None and depth < 1:
        raise ValueError(f"explore: depth must be >= 1 (or None); got {depth}")
    keys, table, formulas = _node_table(root)
    if not any(t["forward"] is not None for t in table):
        raise ValueError("explore: no step of this graph was recorded; run the forward pass "
                         "(and backward) inside `with viz.record_steps():`")
    # with `focus`, the steps are those of the nodes inside it (as `backprop_frames`'s frames)
    shown = [not focus or inside(t["module"], focus) for t in table]
    forward = sorted((i for i, t in enumerate(table) if t["forward"] is not None and shown[i]),
                     key=lambda i: table[i]["forward"])
    backward = sorted((i for i, t in enumerate(table) if t["backward"] is not None and shown[i]),
                      key=lambda i: table[i]["backward"])
    views = _views(root, keys, table, focus, depth, fold, rankdir, direction, title)
    drawn = {i for view in views for members in view["boxes"].values() for i in members}
    for i, t in enumerate(table):
        if i not in drawn:  # outside every picture (a focused page): statistics only
            for part in ("value", "grad"):
                if t[part]:
                    t[part] = {"stats": t[part]["stats"]}
    data = {"title": title or "microtensor explorer", "nodes": table, "formulas": formulas,
            "forward": forward, "backward": backward, "curves": curves, "views": views}
    write_page(data, path)
    return ExplorerPage(path)


def _finite(x):
    """`x` with numpy scalars made Python numbers and NaN or ±inf made None (JSON has neither)."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def _json(data):
    """JSON safe inside <script>: no "</" can close the element early."""
    text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/")


def check_page_path(path):
    """ValueError unless `path` is free or holds a page viz.explore wrote (the one kind of file
    it replaces)."""
    if os.path.isdir(path):
        raise ValueError(f"explore: {str(path)!r} is a directory; give a file name ending in .html")
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(400)
        if MARK not in head:
            raise ValueError(f"explore: {str(path)!r} exists and is not a page viz.explore "
                             "wrote; refusing to overwrite it")


def write_page(data, path):
    """The page template with its style, script and `data` inlined, written atomically.

    Raises ValueError when `path` holds a file that is not an explorer page (never
    overwritten)."""
    page = (ASSETS / "page.html").read_text(encoding="utf-8")
    page = (page.replace("/*STYLE*/", (ASSETS / "explorer.css").read_text(encoding="utf-8"))
            .replace("/*TITLE*/", html.escape(data["title"]))
            .replace("/*DATA*/", _json(data))
            .replace("/*SCRIPT*/", "\n".join((ASSETS / name).read_text(encoding="utf-8")
                                              for name in ("panel.js", "marks.js", "frame.js",
                                                           "explorer.js"))))
    check_page_path(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temp = f"{path}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(temp, path)
