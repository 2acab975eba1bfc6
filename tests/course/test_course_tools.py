"""The tools a student runs next to the notes: `shapes`, `flops` and examples/.

`shapes` and `flops` are the `microtensor shapes` and `microtensor flops` commands.

Each printed number is checked against an independent count, not against the tool itself.
"""
import argparse
import re
import runpy
from pathlib import Path

import pytest

from models.cli import flops, shapes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _shape_rows(text):
    """{row label: [ints]} from the lines '  label   [symbolic]   [n, n, ...]' of `shapes`."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\s+(.+?)\s{2,}\[.*?\]\s+(?:= \[.*?\]\s+)?\[([\d, ]+)\]$", line)
        if match:
            rows[match.group(1)] = [int(n) for n in match.group(2).split(",")]
    return rows


def test_shapes_prints_the_closed_book_shapes_for_b2_t5_d24_h3(capsys):
    assert shapes.run(argparse.Namespace(batch=2, seq=5, d_model=24, heads=3, seed=0)) == 0
    out = capsys.readouterr().out
    rows = _shape_rows(out)
    expected = {
        "X (input)": [2, 5, 24],
        "W_Q = q_proj.weight": [24, 24],
        "W_Q of head 0 = W_Q[:, 0:d]": [24, 8],
        "Q = X W_Q": [2, 5, 24],
        "Q split into heads": [2, 3, 5, 8],
        "Kᵀ per head": [2, 3, 8, 5],
        "S = QKᵀ/√d": [2, 3, 5, 5],
        "A = softmax(S) over keys": [2, 3, 5, 5],
        "Z per head = A V": [2, 3, 5, 8],
        "Z merged (heads concatenated)": [2, 5, 24],
        "output = Z W_O": [2, 5, 24],
    }
    assert rows == expected, f"shape rows: expected {expected}, got {rows}\n{out}"
    assert "d = D/H = 8" in out, f"expected the head width d = 8 in the header, got:\n{out}"
    assert "min 1.000000, max 1.000000" in out, f"expected rows of A to sum to 1, got:\n{out}"


def test_shapes_cross_attention_has_t_k_keys(capsys):
    args = argparse.Namespace(batch=1, seq=3, d_model=8, heads=2, seed=0, kv_seq=7)
    assert shapes.run(args) == 0
    rows = _shape_rows(capsys.readouterr().out)
    for label, shape in (
        ("context (keys and values)", [1, 7, 8]),
        ("Kᵀ per head", [1, 2, 4, 7]),
        ("A = softmax(S) over keys", [1, 2, 3, 7]),
        ("Z per head = A V", [1, 2, 3, 4]),
        ("output = Z W_O", [1, 3, 8]),
    ):
        assert rows.get(label) == shape, f"{label}: expected {shape}, got {rows.get(label)}"


def test_shapes_rejects_heads_that_do_not_divide_d_model():
    with pytest.raises(ValueError, match="not divisible"):
        shapes.run(argparse.Namespace(batch=2, seq=5, d_model=24, heads=5, seed=0))


def _flops_rows(text):
    """[(measured, formula value)] from the lines '... measured N   formula = M' of `flops`."""
    return [(int(m.replace(",", "")), int(f.replace(",", "")))
            for m, f in re.findall(r"measured\s+([\d,]+)\s+.*= ([\d,]+)$", text, flags=re.M)]


@pytest.mark.parametrize("b,t,d,h", [(2, 5, 24, 3), (1, 32, 64, 4)])
def test_flops_prints_measured_counts_equal_to_the_notes_formulas(capsys, b, t, d, h):
    assert flops.run(argparse.Namespace(batch=b, seq=t, d_model=d, heads=h)) == 0
    out = capsys.readouterr().out
    rows = _flops_rows(out)
    expected = [8 * b * t * d * d, 4 * b * t * t * d, b * h * t * t, 4 * b * h * t * t]
    assert [f for _, f in rows] == expected, (
        f"formula values: expected {expected}, got {rows}\n{out}"
    )
    assert [m for m, _ in rows] == expected, (
        f"measured values: expected {expected}, got {rows}\n{out}"
    )


def _run_example(name, capsys):
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def test_example_3_2_scaling_table(capsys):
    out = _run_example("3_2_scaling.py", capsys)
    rows = [line.split() for line in out.splitlines() if re.match(r"\d+\s", line)]
    assert [int(r[0]) for r in rows] == [4, 16, 64, 256, 1024], f"d_k column, got:\n{out}"
    for r in rows:
        d_k, var_raw, var_scaled = int(r[0]), float(r[1]), float(r[2])
        assert abs(var_raw / d_k - 1) < 0.08, (
            f"Var(q·k) at d_k={d_k}: expected ≈ {d_k}, got {var_raw}"
        )
        assert abs(var_scaled - 1) < 0.08, (
            f"Var(q·k/√d_k) at d_k={d_k}: expected ≈ 1, got {var_scaled}"
        )
    largest_raw = float(rows[-1][4])
    assert largest_raw > 0.9, f"raw largest weight at d_k=1024: expected > 0.9, got {largest_raw}"


def test_example_3_3_masking(capsys):
    out = _run_example("3_3_masking.py", capsys)
    sums = [float(s) for s in re.findall(r"row sum ([\d.]+)", out)]
    assert sums[:4] == [1.0] * 4, f"mask before softmax: expected row sums 1, got {sums[:4]}"
    assert all(s < 1 for s in sums[4:7]) and sums[7] == 1.0, (
        f"zeroed after: expected < 1, got {sums[4:]}"
    )
    gaps = [float(g) for g in re.findall(r"largest difference in A = ([\d.]+)", out)]
    assert gaps[0] > 0.01 and gaps[1] == 0, f"finite bias should differ, hard mask not; got {gaps}"
    assert "weights [0. 0. 0. 0.] output [0. 0. 0.]" in out, (
        f"all-blocked row: expected zeros, got:\n{out}"
    )


def test_example_3_4_hand_example(capsys):
    out = _run_example("3_4_hand_example.py", capsys)
    for expected in (
        "A = [0.6698 0.3302] [0.8044 0.1956]",
        "Z = [ 1.6698 -0.6698] [ 1.8044 -0.8044]",
        "A = [1.0000 0.0000] [0.8044 0.1956]",
        "Z = [ 2.0000 -1.0000] [ 1.8044 -0.8044]",
        "first output [ 2.0000 -1.0000] -> [ 2.0000 -1.0000]  (unchanged)",
        "-> [ 20.0000 -10.0000]  (changed)",
        "Q = X W_Q = [[2.0, 1.0], [1.0, 2.0]]  K = [[1.0, 2.0], [1.0, 1.0]]",
        "V = [[2.0, -1.0], [1.0, 0.0]]",
    ):
        assert expected in out, f"expected the line part {expected!r} in:\n{out}"


def test_example_3_7_teacher_forcing(capsys):
    out = _run_example("3_7_teacher_forcing.py", capsys)
    gaps = [float(g) for g in re.findall(r"largest logit difference ([\d.e+-]+)", out)]
    assert len(gaps) == 2 and max(gaps) < 1e-4, (
        f"expected two float32-sized differences, got {gaps}"
    )
    assert "predicted next tokens at the three positions: BCD" in out, f"got:\n{out}"
    assert "without cache: 'ABCDEFG'" in out and "with KV cache: 'ABCDEFG'" in out, f"got:\n{out}"
    assert "[2, 3, 4, 5, 6]" in out and "[2, 1, 1, 1, 1]" in out, f"forward lengths, got:\n{out}"
