

def unbroadcast(grad, shape):
    """Correct: sum the added axes and the stretched ones, then reshape to exactly `shape`."""
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1)
    return grad.sum(axis=axes, keepdims=True).reshape(shape)
