"""Notes 3.4: the hand-computed attention example, then the mask-direction experiment.

The notes give Q, K, V (d_k = 2) but not the X and projection matrices they came from.
This project chooses an X of shape [2, 3] and W_Q, W_K, W_V of shape [3, 2] that give
exactly those Q, K, V (row 1 of X picks rows 1 and 3 of each W, row 2 picks rows 2 and 3).
Then the second token is changed to X[1] = [10, 10, 10]: with the causal mask the first
output stays [2, −1], because token 1 may not read token 2; without the mask it moves.

Run from the repository root:  python examples/3_4_hand_example.py
"""
import numpy as np

import microtensor as mt
import nn

np.set_printoptions(precision=4, suppress=True, floatmode="fixed")

X = np.array([[1.0, 0.0, 1.0],
              [0.0, 1.0, 1.0]])
W_Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
W_K = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
W_V = np.array([[1.0, -1.0], [0.0, 0.0], [1.0, 0.0]])


def projection(weight):
    """A bias-free nn.Linear(3, 2) holding `weight` ([in, out]: Q = X W_Q)."""
    layer = nn.Linear(3, 2, bias=False)
    layer.weight.data = weight.copy()
    return layer


def attend(x, is_causal):
    """(Q, K, V, A, Z) for the input x [2, 3]."""
    x = mt.Tensor(x)
    q, k, v = (projection(w)(x) for w in (W_Q, W_K, W_V))
    z, a = nn.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    return q.numpy(), k.numpy(), v.numpy(), a.numpy(), z.numpy()


def main():
    print("chosen X =", X.tolist(), " W_Q =", W_Q.tolist())
    print("         W_K =", W_K.tolist(), " W_V =", W_V.tolist())
    q, k, v, _, _ = attend(X, is_causal=False)
    print("Q = X W_Q =", q.tolist(), " K =", k.tolist(), " V =", v.tolist())
    print("QKᵀ =", (q @ k.T).tolist(), " S = QKᵀ/√2")
    for is_causal in (False, True):
        _, _, _, a, z = attend(X, is_causal)
        label = "causal mask" if is_causal else "no mask    "
        print(f"{label}: A = {a[0]} {a[1]}   Z = {z[0]} {z[1]}")

    x_new = X.copy()
    x_new[1] = [10.0, 10.0, 10.0]
    print("\nexperiment: X[1] = [10, 10, 10]")
    for is_causal in (True, False):
        _, _, _, _, z_old = attend(X, is_causal)
        _, _, _, _, z = attend(x_new, is_causal)
        label = "causal mask" if is_causal else "no mask    "
        verdict = "unchanged" if np.array_equal(z[0], z_old[0]) else "changed"
        print(f"{label}: first output {z_old[0]} -> {z[0]}  ({verdict})")
    print("Under the causal mask token 1's Q, K, V are the same and it may not read token 2,\n"
          "so its output cannot move; without the mask it is pulled toward V₂ = [20, −10].")


if __name__ == "__main__":
    main()
