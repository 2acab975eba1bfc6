"""What the explorer replays: the order in which the engine ran each op forward and reached each
node backward, with a compact copy of every value and gradient, noted by hooks as they run.

    with viz.record_steps():        # forward and backward hooks (microtensor.hooks)
        _, loss = model(x, y)
        loss.backward()
    viz.explore(loss, "step.html")

The graph keeps no tensors (autograd.py), so values and gradients are copied as the
engine makes them: a forward hook sees each op's output, a backward hook each node's
∂L/∂(output). Only a slice of each is kept (viz.compact), so a whole GPT step fits in a
few megabytes. Inside, it also records the costs of `viz.record_costs()` and the norms
of what each node sends to its inputs (`viz.record_grad_norms()`).
"""
import contextlib
import itertools
import sys
import weakref
from dataclasses import dataclass, field

from microtensor import hooks
from microtensor.autograd import AccumulateGrad

from .compact import summary
from .overlay import record_costs
from .trace import input_names, record_grad_norms


@dataclass
class StepRecord:
    """One graph node as the engine ran it: its place in the forward and the backward order
    (None where it was not seen), its value and gradient (`compact.summary`)."""

    forward: int = None
    backward: int = None
    value: dict = None
    grad: dict = None
    inputs: dict = field(default_factory=dict)  # {slot: summary} of each constant input


_LIBRARY = ("microtensor", "nn", "viz")  # packages whose frames are not the caller's code


def caller_name(tensor, limit=40):
    """The name of the variable holding `tensor` (or its array) in the nearest frame outside
    the library: the model's `x` or `targets`, or a notebook's `y`; "" when none does."""
    frame = sys._getframe(1)
    while frame is not None and limit:
        limit -= 1
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] not in _LIBRARY:
            for name, value in frame.f_locals.items():
                if (value is tensor or value is tensor.data) and not name.startswith("_") \
                        and name != "self":
                    return name
            return ""
        frame = frame.f_back
    return ""


_records = weakref.WeakKeyDictionary()  # graph node (Function or AccumulateGrad) -> StepRecord
_counter = itertools.count()  # one clock for both passes: a later pass numbers after an earlier


def step_record(fn):
    """The StepRecord noted for graph node `fn`, or None."""
    return _records.get(fn)


@contextlib.contextmanager
def record_steps(batch_size=None):
    """Note the forward order, backward order, values and gradients of every op run inside.

    batch_size: B, to tell a flattened [B·T, C] tensor's rows apart (viz.compact.view); by
        default the leading size of the first op output of 3 or more dims.
    Yields nothing; `viz.explore` reads the records back from the graph's nodes. Outside
    the block the engine does no extra work.
    """
    batch = [batch_size, None]  # B, and T: the first op output of 3 or more dims is [B, T, ...]

    def rows_batch(fn, shape):
        """B where a 2-D tensor's rows are the batch's flattened [B·T] positions, else None: a
        weight (or its gradient) is never a batch, even when B divides its row count."""
        b, t = batch
        if isinstance(fn, AccumulateGrad) or (len(shape) == 2 and t and shape[0] != b * t):
            return None
        return b

    def forward(fn, inputs, output):
        if output.grad_fn is not fn:  # no graph recorded (no_grad, or nothing requires grad)
            return
        if batch[1] is None and output.ndim >= 3:
            batch[0] = batch[0] if batch[0] is not None else output.shape[0]
            batch[1] = output.shape[1] if output.shape[0] == batch[0] else None
        record = _records.setdefault(fn, StepRecord())
        record.forward = next(_counter)
        record.value = summary(output.data, rows_batch(fn, output.shape))
        for slot, (t, node) in enumerate(zip(inputs, fn.inputs)):
            if node is None and slot not in fn.constants:  # a constant box of the picture
                record.inputs[slot] = summary(t.data, rows_batch(None, t.shape))
                name = t.name or caller_name(t)
                if name:
                    input_names.setdefault(fn, {})[slot] = name

    def backward(fn, grad_inputs, grad_output):
        record = _records.setdefault(fn, StepRecord())
        record.backward = next(_counter)
        record.grad = summary(grad_output, rows_batch(fn, grad_output.shape))

    with record_costs(), record_grad_norms(), hooks.register_forward_hook(forward), \
            hooks.register_backward_hook(backward):
        yield
