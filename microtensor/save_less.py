"""Memory: a node keeps for backward only the arrays that an asked-for gradient uses.

An op saves what its backward reads (`self.save(a=a, b=b)` for z = a ⊙ b), but ∂L/∂a of a ⊙ b
needs only b, and ∂L/∂b only a: when just one input requires grad, the other saved array would
be kept alive until backward for nothing. Attention's `scores * scale` is that case: without
this, every layer would keep its [B, H, T, T] scores for a constant's gradient. Called from
parity/graph.py's `after_op`, once forward has run.
"""

# op -> {saved name: the one input whose gradient reads it}
SAVED_FOR = {
    "mul": {"b": 0, "a": 1},  # ∂L/∂a = g ⊙ b,  ∂L/∂b = g ⊙ a
    "div": {"a": 1},  # ∂L/∂b = −g ⊙ a / b² (b is read by both)
    "matmul": {"b": 0, "a": 1},  # ∂L/∂a = g bᵀ,  ∂L/∂b = aᵀ g
}


def drop_unneeded(fn):
    """Forget the arrays in `fn.saved` that only a gradient nobody asked for would read."""
    for name, i in SAVED_FOR.get(fn.op, {}).items():
        if not fn.needs_input_grad[i]:
            fn.saved.pop(name, None)
