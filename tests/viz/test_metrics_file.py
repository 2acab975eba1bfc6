"""metrics.jsonl from elsewhere (`microtensor plot-loss --metrics`): a line nested too deep or
with a field of the wrong type is one ValueError naming the file and the line (issue 16)."""
import pytest

from viz.plots import read_metrics

GOOD = '{"iter": 1, "train_loss": 2.5, "val_loss": null, "elapsed_s": 0.1}\n'


@pytest.mark.parametrize("line,why", [
    ("[" * 5000 + "]" * 5000, "too deeply nested"),
    ('{"iter": "3", "train_loss": 1.0, "val_loss": 1.0}', "iter is '3'; expected an integer"),
    ('{"iter": true, "train_loss": 1.0, "val_loss": 1.0}', "iter is True; expected an integer"),
    ('{"iter": 3, "train_loss": [], "val_loss": 1.0}', "train_loss is []; expected a number"),
    ('{"iter": 3, "train_loss": 1.0, "val_loss": "1.0"}', "val_loss is '1.0'; expected a num"),
])
def test_a_bad_line_is_one_error_naming_the_file_and_line(tmp_path, line, why):
    path = tmp_path / "metrics.jsonl"
    path.write_text(GOOD + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        read_metrics(path)
    message = str(caught.value)
    assert message.startswith(f"{path}, line 2: ") and why in message, (
        f"expected '{path}, line 2: ... {why}', got {message!r}")


def test_good_lines_read_back_as_written(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(GOOD * 2, encoding="utf-8")
    assert read_metrics(path) == [{"iter": 1, "train_loss": 2.5, "val_loss": None,
                                   "elapsed_s": 0.1}] * 2
