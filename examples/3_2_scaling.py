"""Notes 3.2: why attention divides the scores by √d_k. A seeded experiment over several d_k.

For q and k with independent entries of mean 0 and variance 1, q·k is a sum of d_k
products of variance 1, so Var(q·k) = d_k. Dividing by √d_k brings it back to about 1.
Without the division softmax saturates: one weight takes almost everything, and the
Jacobian entries ∂p_i/∂s_j = p_i(δ_ij − p_j) that backward multiplies by go to 0.

Run from the repository root:  python examples/3_2_scaling.py
"""
import math

import numpy as np

import microtensor as mt

N_PAIRS = 10_000   # (q, k) pairs for the variance
N_ROWS = 2_000     # query rows for the softmax statistics
N_KEYS = 8         # keys per query row


def softmax_jacobian(p):
    """[rows, T] weights -> [rows, T, T] with entries p_i (δ_ij − p_j)."""
    return p[:, :, None] * (np.eye(p.shape[-1]) - p[:, None, :])


def main():
    rng = np.random.default_rng(0)
    print("d_k   Var(q·k)  Var(q·k/√d_k) | largest weight   | largest |∂p_i/∂s_j| (median)")
    print("                              | raw     scaled   | raw        scaled")
    for d_k in (4, 16, 64, 256, 1024):
        q = mt.Tensor(rng.standard_normal((N_PAIRS, 1, d_k), dtype=np.float32))
        k = mt.Tensor(rng.standard_normal((N_PAIRS, 1, d_k), dtype=np.float32))
        qk = (q @ k.transpose(-2, -1)).numpy().ravel()            # one q·k per pair

        q = mt.Tensor(rng.standard_normal((N_ROWS, 1, d_k), dtype=np.float32))
        k = mt.Tensor(rng.standard_normal((N_ROWS, N_KEYS, d_k), dtype=np.float32))
        s = q @ k.transpose(-2, -1)                               # [rows, 1, keys]
        p_raw = s.softmax(axis=-1).numpy()[:, 0]
        p_scaled = (s * (1 / math.sqrt(d_k))).softmax(axis=-1).numpy()[:, 0]
        jac_raw = np.median(np.abs(softmax_jacobian(p_raw)).max(axis=(1, 2)))
        jac_scaled = np.median(np.abs(softmax_jacobian(p_scaled)).max(axis=(1, 2)))
        print(f"{d_k:<5} {qk.var():8.1f}  {(qk / math.sqrt(d_k)).var():13.3f} | "
              f"{p_raw.max(axis=-1).mean():.3f}   {p_scaled.max(axis=-1).mean():.3f}    | "
              f"{jac_raw:.2e}   {jac_scaled:.2e}")
    print("Var(q·k) follows d_k and the scaled scores stay near variance 1. Unscaled, the\n"
          "largest weight approaches 1 and the softmax derivatives collapse toward 0: the\n"
          "gradient reaching the scores nearly vanishes. (This is the motive under an\n"
          "independence assumption, not a law for every hidden state.)")


if __name__ == "__main__":
    main()
