"""Gradient flow across depth: ‖∂L/∂x_l‖ at the input x_l of each module l, read off the graph that
`backward()` left behind.

For a stack of residual blocks this is the gradient along the residual stream (notes 3.6):
pre-norm x_{l+1} = x_l + F(LN(x_l)) passes ∂L/∂x_{l+1} to x_l through the identity term of
I + ∂F/∂x, post-norm x_{l+1} = LN(x_l + F(x_l)) passes it through every LayerNorm
(Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture").
"""
from .trace import trace
from .views import inside


def module_input_grad_norms(root, modules):
    """[‖∂L/∂x‖ for the input x of each module in `modules`], after `root.backward()`.

    The input of a module is the one tensor made outside it that ops inside it read
    and that carries gradient (its weights, which live inside it, and constants such as
    masks do not count). The norm is that of the whole gradient reaching x, summed over
    every path, as `x.retain_grad()` would hold it; no retain_grad() or second forward
    pass is needed, because a `backward()` run inside `viz.record_grad_norms()` notes
    each node's gradient norm.

    Args:
        root: the scalar loss `backward()` ran from.
        modules: module paths, e.g. ["blocks.0", "blocks.1", ...].
    Returns:
        list of floats, one per module.
    Raises:
        ValueError: a module is not in the graph, it reads several outside tensors (the
            input would be ambiguous), or no backward() ran inside record_grad_norms().
    """
    nodes, edges = trace(root)
    norms = []
    for module in modules:
        sources = []
        for e in edges:
            src, dst = nodes[e.src], nodes[e.dst]
            if (inside(dst.module, module) and not inside(src.module, module)
                    and src.kind not in ("param", "const") and e.src not in sources):
                sources.append(e.src)
        if len(sources) != 1:
            found = [nodes[k].name or nodes[k].op or nodes[k].kind for k in sources]
            raise ValueError(f"module_input_grad_norms: expected one input to {module!r}, "
                             f"found {len(sources)}: {found}")
        norm = nodes[sources[0]].grad_norm
        if norm is None:
            raise ValueError(f"module_input_grad_norms: no gradient at the input of {module!r}; "
                             "call backward() inside viz.record_grad_norms() first")
        norms.append(norm)
    return norms
