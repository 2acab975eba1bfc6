"""Node overlays: the FLOPs and the bytes saved for backward that `microtensor.profile()` counts for
each op, and the gradient backward() sent along each edge, printed on the picture (course notes
3.8).

    with viz.record_costs() as prof:          # a microtensor Profile, and each op's record
        _, loss = model(x, y)
    viz.draw_graph(loss, overlay="flops")     # "4.19 MFLOP" in every op box

The records are the profiler's own (`Profile.record`, called from a forward hook), so a
box's number is exactly the one `profile()` reports for that op.
"""
import contextlib
import weakref

from microtensor import hooks
from microtensor.profiler import Profile

from .style import fmt_count
from .trace import trace
from .views import inside

OVERLAYS = ("flops", "saved", "grad")
NOTES = {
    "flops": "in a box: the FLOPs microtensor.profile() counted for it (a multiply-add is 2)",
    "saved": "in a box: the bytes it saved for backward, as microtensor.profile() counts them",
    "grad": "a number on every edge: the ‖∂L/∂x‖ backward() sent along it",
}

_records = weakref.WeakKeyDictionary()  # graph node -> its OpRecord, noted by record_costs()


@contextlib.contextmanager
def record_costs():
    """Profile every op run inside (yields the `microtensor.profiler.Profile`) and remember
    which graph node each record belongs to, for `draw_graph(overlay="flops" | "saved")`."""
    prof = Profile()

    def note(fn, inputs, output):
        prof.record(fn, inputs, output)
        if output.grad_fn is fn:
            _records[fn] = prof.records[-1]

    with hooks.register_forward_hook(note):
        yield prof


def node_records(root):
    """{trace key: OpRecord} of the ops behind `root` that ran inside `record_costs()`."""
    nodes, _ = trace(root)
    by_key = {id(fn): record for fn, record in _records.items()}
    return {key: by_key[key] for key in nodes if key in by_key}


def _amount(records, what):
    if what == "flops":
        return sum(r.flops for r in records)
    unique = {}
    for r in records:
        for _, nbytes, key in r.saved.values():
            unique[key] = max(unique.get(key, 0), nbytes)
    return sum(unique.values())  # an array two ops keep (A) counts once, as profile() does


def overlay_lines(root, view_nodes, what):
    """{view key: "4.19 MFLOP" | "saved 32.8 kB"} for the boxes of a `graph_view`: an op's own
    record, a folded module's records summed. Raises ValueError when nothing was recorded."""
    records = node_records(root)
    if not records:
        raise ValueError(f"overlay={what!r}: no costs were recorded for this graph; run the "
                         "forward pass inside `with viz.record_costs():`")
    unit, prefix = ("FLOP", "") if what == "flops" else ("B", "saved ")
    lines = {}
    for key, node in view_nodes.items():
        if key in records:
            group = [records[key]]
        elif node.kind == "module":
            group = [r for r in records.values() if inside(r.module, node.name)]
        else:
            continue
        if group:
            lines[key] = prefix + fmt_count(_amount(group, what), unit)
    return lines
