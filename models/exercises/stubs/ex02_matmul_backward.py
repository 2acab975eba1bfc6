"""Exercise 2 · notes 3.8 · the backward pass of a matrix product.

The notes write it for Z = AV (A the attention weights): with the upstream gradient
G = ∂L/∂Z,
    ∂L/∂V = AᵀG        ∂L/∂A = GVᵀ.
For any product Z = a @ b the same holds: ∂L/∂a = G bᵀ, ∂L/∂b = aᵀ G.

Shapes: a [..., M, K], b [..., K, N], g [..., M, N] (the same leading batch dims on all three,
e.g. [B, H] in attention) -> (∂L/∂a [..., M, K], ∂L/∂b [..., K, N]), the inputs' dtype.
Check the shapes: [M, N] @ [N, K] gives [M, K], as a has.

Hint: "transpose" means swapping the *last two* axes, np.swapaxes(x, -1, -2); x.T reverses
every axis, which breaks batched matrices (and numpy's x.transpose takes a full permutation
of the axes: PyTorch's x.transpose(-2, -1) is np.swapaxes here).
Keep the order: G on the left for ∂L/∂a, G on the right for ∂L/∂b.

Reference (read it after): microtensor/ops/matmul.py, `MatMul.backward` (broadcast batch
dims are summed back by the engine's `unbroadcast`).
"""
import numpy as np  # noqa: F401  (you will need it)


def matmul_backward(a, b, g):
    """(∂L/∂a, ∂L/∂b) for z = a @ b, given g = ∂L/∂z (numpy arrays)."""
    raise NotImplementedError("exercise 2: write matmul_backward(a, b, g) in "
                              "exercises/ex02_matmul_backward.py")
