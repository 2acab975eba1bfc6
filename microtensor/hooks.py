"""Observers of the engine: forward hooks see every op as it runs, backward hooks every node as
backward passes it.

The model is PyTorch's (`torch.nn.modules.module.register_module_forward_hook`,
`Module.register_full_backward_hook`), applied to ops instead of modules: the profiler
counts FLOPs through a forward hook and `viz.record_grad_norms()` notes gradient norms
through a backward hook. With no hook registered the engine does no work for observers.

    def show(fn, inputs, output):
        print(fn.op, output.shape)

    with microtensor.hooks.register_forward_hook(show):   # a handle; `with` removes it
        y = (x @ w).relu()
"""
import itertools

_forward_hooks = {}  # handle id -> hook(fn, inputs, output)
_backward_hooks = {}  # handle id -> hook(fn, grad_inputs, grad_output)
_ids = itertools.count()


class RemovableHandle:
    """What a `register_*_hook` returns: `remove()` unregisters the hook; `with handle:` removes
    it on exit."""

    def __init__(self, registry):
        self._registry, self.id = registry, next(_ids)

    def remove(self):
        self._registry.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()


def register_forward_hook(hook):
    """Call `hook(fn, inputs, output)` after every op has run (and been linked into the graph
    when one is being recorded).

    fn: the op's `Function` (its `op`, `scope`, `saved`); inputs: the input Tensors;
    output: the output Tensor (`output.grad_fn is fn` when a graph is being recorded,
    None under `no_grad()` or when no input requires grad). The return value is ignored.
    Returns a `RemovableHandle`.
    """
    handle = RemovableHandle(_forward_hooks)
    _forward_hooks[handle.id] = hook
    return handle


def register_backward_hook(hook):
    """Call `hook(fn, grad_inputs, grad_output)` for every graph node that backward() passes.

    grad_output: the numpy array dL/d(output of fn); grad_inputs: one array per entry of
    `fn.inputs` (already summed back to that input's shape), None where no gradient
    flows. For a leaf's `AccumulateGrad` node grad_inputs is (). Returns a `RemovableHandle`.
    """
    handle = RemovableHandle(_backward_hooks)
    _backward_hooks[handle.id] = hook
    return handle


def run_forward_hooks(fn, inputs, output):
    # a copy of the registry: a hook may remove itself (or add another) while it runs
    for hook in list(_forward_hooks.values()):
        hook(fn, inputs, output)


def run_backward_hooks(fn, grad_inputs, grad_output):
    # a copy of the registry, as above
    for hook in list(_backward_hooks.values()):
        hook(fn, grad_inputs, grad_output)
