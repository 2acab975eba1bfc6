"""How far tiled attention's output and gradients are from ordinary attention's (notes 3.8).

    python benchmarks/attention_equality.py

For each dtype, the largest |tiled − ordinary| / largest |ordinary| of Z, ∂L/∂Q, ∂L/∂K and ∂L/∂V
over random shapes like those of tests/nn/test_tiled_attention.py (T not a multiple of the
tile, T_q ≠ T_k, causal, boolean, float and padding masks with fully blocked rows) and the baby
model's attention at T = 1024 (B = 12, H = 4, d = 32, causal, tiles of 64). Then, for float32
at T = 1024, each attention's own error against the float64 result of the same inputs: the
difference between the two is mostly ordinary attention's rounding.
"""
import numpy as np

import microtensor as mt
import nn

CASES = [  # lead dims, T_q, T_k, d, tile, mask kind, is_causal
    ((2, 3), 37, 37, 8, 16, None, True),
    ((2, 3), 37, 53, 8, 16, None, False),
    ((2, 3), 53, 37, 4, 8, "bool", False),
    ((3, 2), 45, 70, 8, 16, "padding", True),
    ((2, 2), 33, 33, 16, 7, "float", True),
    ((1, 1), 5, 130, 8, 64, "float", False),
    ((12, 4), 1024, 1024, 32, 64, None, True),
]


def mask_of(kind, lead, t_q, t_k, dtype, rng):
    if kind is None:
        return None
    if kind == "padding":
        pad = rng.random((lead[0], 1, 1, t_k)) < 0.3
        pad[0] = True
        return pad
    blocked = rng.random(lead[-1:] + (t_q, t_k)) < 0.4
    blocked[..., 1, :] = True
    if kind == "bool":
        return blocked
    return np.where(blocked, -np.inf, rng.normal(size=blocked.shape)).astype(dtype)


def run(attention, arrays, upstream, mask, causal, tile):
    q, k, v = (mt.Tensor(a.copy(), requires_grad=True) for a in arrays)
    if attention == "tiled":
        z = nn.tiled_attention(q, k, v, attn_mask=mask, is_causal=causal, tile_size=tile)
    else:
        z, _ = nn.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    z.backward(upstream)
    return z.data, q.grad, k.grad, v.grad


def main():
    names = ("Z", "∂L/∂Q", "∂L/∂K", "∂L/∂V")
    print("| dtype | shapes | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for dtype in (np.float32, np.float64):
        for label, cases in (("small, masked", CASES[:-1]), ("baby, T = 1024", CASES[-1:])):
            worst = np.zeros(len(names))
            for lead, t_q, t_k, d, tile, kind, causal in cases:
                rng = np.random.default_rng(1)
                arrays = [rng.normal(size=lead + (t, d)).astype(dtype) for t in (t_q, t_k, t_k)]
                upstream = rng.normal(size=lead + (t_q, d)).astype(dtype)
                mask = mask_of(kind, lead, t_q, t_k, dtype, rng)
                tiled = run("tiled", arrays, upstream, mask, causal, tile)
                ordinary = run("ordinary", arrays, upstream, mask, causal, tile)
                for i, (a, b) in enumerate(zip(tiled, ordinary)):
                    a, b = a.astype(np.float64), b.astype(np.float64)
                    worst[i] = max(worst[i], np.abs(a - b).max() / np.abs(b).max())
            print(f"| {np.dtype(dtype).name} | {label} | "
                  + " | ".join(f"{w:.1e}" for w in worst) + " |", flush=True)
    lead, t_q, t_k, d, tile, kind, causal = CASES[-1]
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=lead + (t, d)) for t in (t_q, t_k, t_k)]
    upstream = rng.normal(size=lead + (t_q, d))
    truth = run("ordinary", arrays, upstream, None, causal, tile)     # float64
    print("\nfloat32 at T = 1024, error against float64 (largest difference / largest value):")
    for attention in ("ordinary", "tiled"):
        ours = run(attention, [a.astype(np.float32) for a in arrays],
                   upstream.astype(np.float32), None, causal, tile)
        print(f"| {attention} | " + " | ".join(
            f"{np.abs(a.astype(np.float64) - b).max() / np.abs(b).max():.1e}"
            for a, b in zip(ours, truth)) + " |", flush=True)


if __name__ == "__main__":
    main()
