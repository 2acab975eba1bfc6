"""Fold runs of repeated blocks (`blocks.0` … `blocks.3`, one class) into one box that carries each
block's gradient norm.

As TorchLens's `fold_repeats` and torchvista's compressed view: a 12-layer GPT at depth 1
reads embeddings → `blocks.0–11 · TransformerBlock ×12` → final norm. Takes and returns the
(nodes, edges) of `viz.trace` after `views.collapse`, so only folded module boxes fold.
"""
from dataclasses import dataclass, field

from .trace import Edge, Node


@dataclass
class FoldedNode(Node):
    """A run of sibling module boxes drawn as one; `members` is [(path, ‖∂L/∂output‖)] in order."""

    members: list = field(default_factory=list)


def _runs(nodes):
    """[[key, ...]]: runs of ≥ 2 module boxes "P.i", "P.i+1", … of one class, in index order."""
    by_parent = {}
    for key, node in nodes.items():
        parent, _, index = node.name.rpartition(".")
        if node.kind == "module" and parent and index.isdigit():
            by_parent.setdefault((parent, node.op), []).append((int(index), key))
    runs = []
    for members in by_parent.values():
        members.sort()
        run = [members[0]]
        for item in members[1:]:
            if item[0] == run[-1][0] + 1:
                run.append(item)
                continue
            runs.append(run)
            run = [item]
        runs.append(run)
    return [[key for _, key in run] for run in runs if len(run) >= 2]


def fold_repeats(nodes, edges):
    """Replace each run of repeated module boxes by one `FoldedNode`.

    The folded box takes the shape and gradient norm of the last block (what leaves the
    run). Edges inside the run vanish; edges from or to it merge per pair of boxes,
    keeping the largest gradient norm and any label (GPT's tied weight read later).
    """
    group_of, kept = {}, dict(nodes)
    for run in _runs(nodes):
        first, last = nodes[run[0]], nodes[run[-1]]
        parent, _, start = first.name.rpartition(".")
        end = last.name.rpartition(".")[2]
        key = f"fold:{parent}.{start}-{end}"
        kept[key] = FoldedNode(key, "module", op=first.op, name=f"{parent}.{start}–{end}",
                               shape=last.shape, grad_norm=last.grad_norm,
                               members=[(nodes[k].name, nodes[k].grad_norm) for k in run])
        for k in run:
            group_of[k] = key
            del kept[k]
    merged = {}
    for e in edges:
        src, dst = group_of.get(e.src, e.src), group_of.get(e.dst, e.dst)
        if src == dst:
            continue
        pair = (src, dst, e.slot) if src == e.src and dst == e.dst else (src, dst)
        old = merged.get(pair)
        if old is None or (e.grad_norm or 0) > (old.grad_norm or 0):
            label = e.label or (old.label if old else "")
            merged[pair] = Edge(src, dst, e.slot, e.grad_norm, label)
        elif e.label and not old.label:
            old.label = e.label
    return kept, list(merged.values())
