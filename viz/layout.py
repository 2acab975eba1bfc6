"""Where boxes go in a graph picture: one dashed cluster per module, boxes declared in forward
order, weights beside the op that reads them and attention's steps in one row (a landscape
slide: Q, K, V columns over S → mask → A → Z).

Graphviz's `dot` keeps the order boxes are declared in where it can, and `rank=same` rows
put boxes side by side; nothing here computes coordinates.
"""
from .fold import FoldedNode
from .labels import fill_kind
from .views import module_units


def cluster_tree(nodes):
    """{module path: [node keys directly in it]} for the nodes that sit inside modules."""
    members = {}
    for key, node in nodes.items():
        path = node.name if node.kind == "module" else node.module
        if isinstance(node, FoldedNode):
            path = node.members[0][0]  # "blocks.0–3" sits where "blocks.0" would
        units = module_units(path)
        if node.kind == "module":
            units = units[:-1]  # a collapsed module sits in its parent's cluster
        members.setdefault(".".join(units), []).append(key)
    return members


def _merge_tail(nodes, edges, start, allowed):
    """The ops that follow Z = AV while they stay in its module and have one reader each:
    the head merge (transpose, reshape) that joins Z's row."""
    readers = {}
    for e in edges:
        readers.setdefault(e.src, []).append(e.dst)
    tail = []
    for key in start:
        while len(readers.get(key, [])) == 1 and readers[key][0] in allowed:
            key = readers[key][0]
            tail.append(key)
    return tail


def emit_clusters(graph, nodes, ids, members, attrs_of, edges, flatten=(), parent="",
                   where="", rows=False):
    """One dashed cluster per module, nested as the modules are; paths in `flatten` get no box
    (the modules around a focused one, which would only frame it). `where` is the innermost
    cluster drawn so far: labels inside it leave out its path."""
    here = members.get(parent, [])
    # with `rows`, attention's steps stand side by side: QKᵀ → S → mask → A → Z reads across
    # the page under the Q, K and V columns, which keeps a slide landscape
    steps = [k for k in here if rows and fill_kind(nodes[k]) == "attention"]
    steps += _merge_tail(nodes, edges, [k for k in steps if nodes[k].role == "Z"], set(here))
    # a weight beside the op that reads it (W → x W in a Linear): one rank less, and the
    # input's edges come into the projections from above instead of around the weights
    beside = {}
    for key in here if rows else ():
        readers = [e.dst for e in edges if e.src == key and e.dst in here]
        if nodes[key].kind == "param" and len(readers) == 1 and readers[0] not in steps:
            beside.setdefault(readers[0], []).append(key)
    paired = set(beside) | {k for params in beside.values() for k in params}
    for key in here:
        if key not in paired and (key not in steps or len(steps) < 2):
            graph.node(ids[key], **attrs_of(key, where))
    for reader, params in beside.items():
        with graph.subgraph() as pair:
            pair.attr(rank="same")
            for key in params + [reader]:
                pair.node(ids[key], **attrs_of(key, where))
    if len(steps) >= 2:
        with graph.subgraph() as row:
            row.attr(rank="same")
            for key in steps:
                row.node(ids[key], **attrs_of(key, where))
    depth = len(module_units(parent))
    # in order of first use (members follow the forward order): q_proj, k_proj, v_proj, out_proj
    children = list(dict.fromkeys(".".join(module_units(p)[:depth + 1]) for p in members
                                  if p and len(module_units(p)) > depth
                                  and module_units(p)[:depth] == module_units(parent)))
    for child in children:
        if child in flatten:
            emit_clusters(graph, nodes, ids, members, attrs_of, edges, flatten, child, where,
                           rows)
            continue
        kind = next((k for n in nodes.values() for p, k in n.scope if p == child and k), "")
        name = child[len(where) + 1:] if where else child
        with graph.subgraph(name="cluster_" + child) as sub:
            sub.attr(label=f"{name}  {kind}".strip(), tooltip=child, style="rounded,dashed",
                     color="#7f7f7f", fontname="Helvetica", fontsize="11")
            emit_clusters(sub, nodes, ids, members, attrs_of, edges, flatten, child, child,
                           rows)


def forward_order(nodes, edges):
    """`nodes` reordered as a forward pass would make them, an op's inputs in slot order
    (Q before K before V): dot keeps the order boxes are declared in where it can."""
    inputs = {}
    for e in sorted(edges, key=lambda e: e.slot):
        inputs.setdefault(e.dst, []).append(e.src)
    readers = {e.src for e in edges}
    order, done = [], set()
    for sink in [k for k in nodes if k not in readers] + list(nodes):
        stack = [(sink, False)]
        while stack:
            key, expanded = stack.pop()
            if expanded:
                order.append(key)
                continue
            if key in done:
                continue
            done.add(key)
            stack.append((key, True))
            stack.extend((k, False) for k in reversed(inputs.get(key, [])) if k not in done)
    return {k: nodes[k] for k in order}


def ancestors(path):
    """"blocks.0.attn" -> ["blocks.0"]: the modules that enclose `path` (not `path` itself)."""
    units = module_units(path)
    return [".".join(units[:i]) for i in range(1, len(units))]
