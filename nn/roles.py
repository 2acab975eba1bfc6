"""The names of the chapter's steps on their graph nodes (`grad_fn.role`: "Q", "QKᵀ", "S", "A",
"Z", "residual", ...), by which viz/'s pictures and the course tests find them."""


def named(tensor, role):
    """`tensor`, its graph node given the name `role` (no node, as under no_grad: as it is)."""
    if tensor.grad_fn is not None:
        tensor.grad_fn.role = role
    return tensor


def name_steps(steps):
    """named(tensor, role) for each {role: tensor} in order (None: a step not taken)."""
    for role, tensor in steps.items():
        if tensor is not None:
            named(tensor, role)
