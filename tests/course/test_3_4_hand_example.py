"""Notes 3.4: the hand-computed example and the [10, 10, 10] mask-direction experiment.

The notes give Q = [[2,1],[1,2]], K = [[1,2],[1,1]], V = [[2,−1],[1,0]] (d_k = 2) but not
the figure with X and the projections, so this project chooses (examples/3_4_hand_example.py
uses the same numbers):

    X   = [[1, 0, 1],     W_Q = [[1, 0],    W_K = [[0, 1],    W_V = [[1, −1],
           [0, 1, 1]]            [0, 1],           [0, 0],           [0,  0],
                                 [1, 1]]           [1, 1]]           [1,  0]]

Row 1 of X picks rows 1 and 3 of each W, row 2 picks rows 2 and 3, so X W_Q = Q,
X W_K = K and X W_V = V exactly.
"""
import math

import numpy as np
from mt_testing import check_close, recorded_steps

import microtensor as mt
import nn

X = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
W_Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
W_K = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
W_V = np.array([[1.0, -1.0], [0.0, 0.0], [1.0, 0.0]])

# the notes' numbers
Q = [[2, 1], [1, 2]]
K = [[1, 2], [1, 1]]
V = [[2, -1], [1, 0]]
A_PLAIN = [[0.6698, 0.3302], [0.8044, 0.1956]]
Z_PLAIN = [[1.6698, -0.6698], [1.8044, -0.8044]]
A_CAUSAL = [[1.0, 0.0], [0.8044, 0.1956]]
Z_CAUSAL = [[2.0, -1.0], [1.8044, -0.8044]]


def _projections():
    """Three bias-free nn.Linear(3, 2) layers holding W_Q, W_K, W_V (weight is [in, out])."""
    layers = []
    for w in (W_Q, W_K, W_V):
        layer = nn.Linear(3, 2, bias=False)
        layer.weight.data = w.copy()
        layers.append(layer)
    return layers


def _attention(x, is_causal):
    """Z, A and the graph's named tensors for X → (Q, K, V) → attention."""
    w_q, w_k, w_v = _projections()
    x = mt.Tensor(np.asarray(x, dtype=np.float64))
    with recorded_steps() as steps:
        z, a = nn.scaled_dot_product_attention(w_q(x), w_k(x), w_v(x), is_causal=is_causal)
    return z.data, a.data, steps


def test_chosen_x_and_projections_give_the_notes_q_k_v():
    w_q, w_k, w_v = _projections()
    x = mt.Tensor(X)
    check_close(w_q(x), Q, "Q = X W_Q", atol=0)
    check_close(w_k(x), K, "K = X W_K", atol=0)
    check_close(w_v(x), V, "V = X W_V", atol=0)


def test_scores_by_hand():
    _, _, steps = _attention(X, is_causal=False)
    # QKᵀ: [2·1+1·2, 2·1+1·1; 1·1+2·2, 1·1+2·1] = [[4, 3], [5, 3]]
    check_close(steps["QKᵀ"], [[4, 3], [5, 3]], "QKᵀ by hand", atol=0)
    check_close(steps["S"], np.array([[4, 3], [5, 3]]) / math.sqrt(2), "S = QKᵀ/√2", atol=1e-15)


def test_without_mask_a_and_z_match_the_notes_to_4_decimals():
    z, a, _ = _attention(X, is_causal=False)
    check_close(a, A_PLAIN, "A without mask (notes, 4 decimals)", atol=5e-5)
    check_close(z, Z_PLAIN, "Z without mask (notes, 4 decimals)", atol=5e-5)
    # closed form: row i puts σ(Δ_i/√2) on key 1, with Δ = (4−3, 5−3) the score gaps
    first = 1 / (1 + np.exp(-np.array([1.0, 2.0]) / math.sqrt(2)))
    check_close(a[:, 0], first, "A[:, 0] = σ(gap/√2)", atol=1e-12)


def test_with_causal_mask_a_and_z_match_the_notes_to_4_decimals():
    z, a, _ = _attention(X, is_causal=True)
    check_close(a, A_CAUSAL, "A with causal mask (notes, 4 decimals)", atol=5e-5)
    check_close(z, Z_CAUSAL, "Z with causal mask (notes, 4 decimals)", atol=5e-5)
    check_close(z[0], [2, -1], "first output = V's first row exactly", atol=0)


def _x_changed():
    x = X.copy()
    x[1] = [10, 10, 10]
    return x


def test_changing_the_second_token_leaves_the_first_causal_output_at_2_minus_1():
    z, a, _ = _attention(_x_changed(), is_causal=True)
    check_close(
        z[0], [2, -1], "first output under the causal mask after X[1] = [10, 10, 10]", atol=0
    )
    check_close(a[0], [1, 0], "first row of A under the causal mask", atol=0)
    z_before, _, _ = _attention(X, is_causal=True)
    assert np.abs(z[1] - z_before[1]).max() > 1, \
        f"the second output may see the change: expected it to move, got {z_before[1]} → {z[1]}"


def test_without_the_mask_the_first_output_changes():
    z, a, _ = _attention(_x_changed(), is_causal=False)
    # new second row: Q₂ = 10·(1+0+1, 0+1+1) = [20, 20], K₂ = [10, 20], V₂ = [20, −10];
    # token 1's scores: [q₁·k₁, q₁·k₂]/√2 = [4, 40]/√2, so nearly all weight moves to token 2
    weight_on_2 = 1 / (1 + np.exp(-36 / math.sqrt(2)))
    check_close(a[0, 1], weight_on_2, "A[0, 1] after the change, no mask", atol=1e-12)
    expected = (1 - weight_on_2) * np.array([2, -1]) + weight_on_2 * np.array([20, -10])
    check_close(z[0], expected, "first output without the mask", atol=1e-9)
    assert np.abs(z[0] - np.array([2, -1])).max() > 1, f"expected far from [2, −1], got {z[0]}"
