"""What a graph node keeps beyond its gradient, and torch's checks around it: the pictures'
metadata (module scope, role, shapes, constants), version checks on saved arrays, retained
gradients, hooks, and freeing the saved arrays after backward (as torch).

The core enters it in two places: `apply` calls `after_op` once per op, and `Tensor.backward`
hands `backward()` the step `torch_step`, which wraps each node's `backward(g)` from outside.
`NodeRecord`'s members are put on `Function` at import, as if written in its class body.
"""
import numpy as np

from .. import hooks
from ..autograd import AccumulateGrad, Function, unbroadcast
from ..save_less import drop_unneeded
from ..scope import current_scope
from .versions import VIEW_OPS, root


class NodeRecord:
    """A node's record for the pictures and the checks (installed on `Function`).

        scope, module: the nn.Module calls it ran inside, ((path, class), ...), and the
            innermost path ("blocks.0.attn"; "" outside any module).
        role: None, or a step's name, set by the code that computes it (attention's "QKᵀ",
            "S", "A", "Z"; a block's "residual" adds).
        shape, dtype: of the output.
        constants: {input index: value} of each one-element constant input (the 1/√d_k of
            attention's scaling); constant_names: {input index: name} of each named
            constant input (a Tensor made with name=, such as a fixed position table).
        saved_shapes(): {name: shape} of what was saved, still known after it is freed.
    """

    role = None
    _retained = None  # weakref to the output tensor, set by `Tensor.retain_grad()`
    # starting values, as class attributes: replaced (never changed in place) when known
    scope = ()
    constants = constant_names = {}
    shape = ()
    dtype = None
    _saved_shapes = None
    _watched = ()

    @property
    def module(self):
        return self.scope[-1][0] if self.scope else ""

    def saved_shapes(self):
        if self.saved:
            return {k: np.shape(v) for k, v in self.saved.items()}
        return self._saved_shapes or {}

    def release(self):
        """Free the saved arrays once backward has used them (the graph's shape stays)."""
        if self.saved:
            self._saved_shapes = self.saved_shapes()
            self.saved = {}

    def watch(self, tensors):
        """Note the version of each tensor whose array this node saved, so that backward can
        refuse to run on values changed in place since (torch's version counter check)."""
        arrays = list(self.saved.values())
        self._watched = [(t._version_box(), t._version_box()[0]) for t in tensors
                         if any(np.may_share_memory(a, t.data) for a in arrays)]

    def check_versions(self):
        for box, version in self._watched:
            if box[0] != version:
                raise RuntimeError(
                    f"backward through '{self.op}': a tensor it saved for backward was "
                    "modified in place since (x += ..., x[i] = ...); write x = x + ... "
                    "instead, or run backward before the change (as torch)")

    def __repr__(self):
        return f"<{self.op}{f' ({self.role})' if self.role else ''}>"


def _install():
    for name, value in vars(NodeRecord).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(Function, name, value)
    AccumulateGrad.role = None
    AccumulateGrad.__repr__ = lambda self: (
        f"<accumulate_grad {self.variable.name or tuple(self.variable.shape)}>")


_install()


def after_op(fn, inputs, out, recorded):
    """After `apply` ran `fn` on `inputs` into `out` (recorded: `fn` is out's grad_fn)."""
    if fn.op in VIEW_OPS and root(out.data) is root(inputs[0].data):  # a view: one counter
        out._version = inputs[0]._version_box()  # writes through either count for both
    observed = bool(hooks._forward_hooks)
    if recorded or observed:  # the pictures and the hooks read these (apply set the shape)
        fn.scope, fn.shape, fn.dtype = current_scope(), out.data.shape, out.data.dtype
    if recorded:
        if fn.saved:
            drop_unneeded(fn)  # memory: keep only what an asked-for gradient uses
        fn.constants = {i: t.data.item() for i, t in enumerate(inputs)
                        if not t._requires_grad and t.data.size == 1}
        fn.constant_names = {i: t.name for i, (t, node) in enumerate(zip(inputs, fn.inputs))
                             if node is None and t.name}
        if fn.saved:
            fn.watch(inputs + (out,))
    if observed:
        hooks.run_forward_hooks(fn, inputs, out)


def torch_step(retain_graph):
    """The step `backward()` runs at each node, as torch's engine: `node.backward(g)` with the
    node's retained output given g, freed or changed saved arrays refused, one gradient per
    input required, the backward hooks run and the saved arrays freed (unless retain_graph)."""
    def step(node, g):
        if isinstance(node, AccumulateGrad):
            node.backward(g)
            grads = ()
        else:
            check_node(node, g)
            grads = node.backward(g)
            if not isinstance(grads, (tuple, list)):
                grads = (grads,)
            check_gradients(node, grads)
        if hooks._backward_hooks:  # they see each gradient summed back to its input's shape
            hooks.run_backward_hooks(node, tuple(
                None if p is None or pg is None
                else unbroadcast(np.asarray(pg), p.shape).astype(p.dtype, copy=False)
                for p, pg in zip(node.inputs, grads)), g)
        if not retain_graph and hasattr(node, "release"):
            node.release()
        return grads
    return step


def check_node(node, g):
    """Before `node.backward(g)`: its retained output gets g; refuse freed or changed arrays."""
    retained = node._retained() if node._retained is not None else None
    if retained is not None:
        AccumulateGrad(retained).backward(g)  # .grad of an intermediate tensor, as a leaf's
    if node._saved_shapes is not None and not node.saved:
        raise RuntimeError(
            f"backward through '{node.op}' a second time: its saved arrays were freed "
            "by the first backward(); call backward(retain_graph=True) the first time")
    node.check_versions()


def named_error(op, arrays, error):
    """numpy's ValueError from `op`'s forward, named: the op and its input shapes (unless the
    op's own check named it already)."""
    message = str(error)
    if not message.startswith(op):
        shapes = ", ".join(str(a.shape) for a in arrays)
        message = f"{op}: {message} (input shapes: {shapes})"
    return ValueError(message)


def check_gradients(node, input_grads):
    """RuntimeError unless a node's backward returned one gradient per input; ValueError for
    one with fewer dims than its input (unbroadcast sums dims away, it adds none)."""
    if len(input_grads) != len(node.inputs):
        raise RuntimeError(f"'{node.op}'.backward returned {len(input_grads)} gradients; "
                           f"expected {len(node.inputs)}, one per input (None for none)")
    for parent, pg in zip(node.inputs, input_grads):
        if parent is not None and pg is not None and np.ndim(pg) < len(parent.shape):
            raise ValueError(f"a gradient of shape {np.shape(pg)} for an input of shape "
                             f"{parent.shape}")
