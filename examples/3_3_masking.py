"""Notes 3.3: the causal mask goes in before softmax; zeroing the future afterwards is wrong.

Four tokens, random scores. Masking first (−∞ where key j > query i) gives rows that
sum to 1 over the visible keys; softmax first and zeroing afterwards gives rows that sum
to less than 1. Then: a finite additive bias depends on where the 1/√d_k goes, a hard
0/−∞ mask does not; and a query whose keys are all blocked gets zeros, not NaN.

Run from the repository root:  python examples/3_3_masking.py
"""
import math

import numpy as np

import microtensor as mt
import nn

np.set_printoptions(precision=4, suppress=True)


def show(title, a):
    print(title)
    for row in a:
        print("   ", row, f"  row sum {row.sum():.4f}")


def main():
    rng = np.random.default_rng(0)
    T, d_k = 4, 8
    q, k, v = (mt.Tensor(rng.normal(size=(T, d))) for d in (d_k, d_k, 3))
    future = np.triu(np.ones((T, T), dtype=bool), k=1)       # True = blocked (j > i)

    _, a_before = nn.scaled_dot_product_attention(q, k, v, is_causal=True)
    show("mask before softmax (the right order): softmax(S + M)", a_before.numpy())
    _, a_full = nn.scaled_dot_product_attention(q, k, v)
    show("softmax first, future zeroed afterwards (wrong): rows lose weight",
         np.where(future, 0.0, a_full.numpy()))

    # attn_mask is added after the scaling (QKᵀ/√d_k + M), so passing M/√d_k gives (QKᵀ + M)/√d_k
    i, j = np.indices((T, T))
    bias = -1.0 * np.abs(i - j)                               # a finite additive bias
    hard = np.where(future, -np.inf, 0.0)                     # the course's M: 0 or −∞
    for name, m in (("finite bias −|i−j|", bias), ("hard 0/−∞ mask   ", hard)):
        _, inside = nn.scaled_dot_product_attention(q, k, v, attn_mask=m / math.sqrt(d_k))
        _, outside = nn.scaled_dot_product_attention(q, k, v, attn_mask=m)
        gap = np.abs(inside.numpy() - outside.numpy()).max()
        print(f"{name}: (QKᵀ+M)/√d_k vs QKᵀ/√d_k + M, largest difference in A = {gap:.4f}")

    blocked = np.zeros((T, T), dtype=bool)
    blocked[2] = True                                         # query 2 may see nothing
    z, a = nn.scaled_dot_product_attention(q, k, v, attn_mask=blocked)
    print("query 2 with every key blocked: weights", a.numpy()[2], "output", z.numpy()[2],
          "(zeros, not NaN: the one row that does not sum to 1)")


if __name__ == "__main__":
    main()
