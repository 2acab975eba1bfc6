"""What the explorer's heatmaps keep of a tensor (viz.compact.view): batch row 0, every position."""
import numpy as np

from viz.compact import heatmap, view


def test_a_3d_activation_keeps_every_position_of_batch_row_0():
    x = np.arange(2 * 8 * 3, dtype=np.float64).reshape(2, 8, 3)  # [B, T, D], T a multiple of B
    kept, index = view(x, batch_size=2)
    assert kept.shape == (1, 8, 3) and index == "[0, :, :]", (
        f"[B=2, T=8, D=3]: expected row 0's 8 positions '[0, :, :]', got {kept.shape} {index!r}")
    np.testing.assert_array_equal(kept[0], x[0], err_msg="the heatmap's values are x[0]")
    assert heatmap(x, batch_size=2)["shape"] == [1, 8, 3]


def test_a_flattened_2d_tensor_keeps_the_rows_of_batch_row_0():
    x = np.arange(16 * 3, dtype=np.float64).reshape(16, 3)  # [B·T, C] with B = 2
    kept, index = view(x, batch_size=2)
    assert kept.shape == (1, 8, 3) and index == "[:8, :]", (
        f"[B·T=16, C] with B=2: expected its first 8 rows, got {kept.shape} {index!r}")
