"""A leaf's one AccumulateGrad node, kept while a graph uses it (torch's grad accumulator).

Every op that reads a leaf must link to the same node, so that backward sums the leaf's
gradients before adding them to `.grad` once. The tensor holds its node weakly: the graphs
that use it own it, and it goes with the last of them.
"""
import weakref


def leaf_node(tensor, make):
    """`tensor`'s AccumulateGrad, made with `make(tensor)` if no living graph holds one."""
    node = tensor._accumulator() if tensor._accumulator is not None else None
    if node is None:
        node = make(tensor)
        tensor._accumulator = weakref.ref(node)
    return node
