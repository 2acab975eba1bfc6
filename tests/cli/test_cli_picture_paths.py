"""Every flag that names a picture to write refuses, before any work, an empty name, a path
inside a file and a directory; plot-loss reads a metrics.jsonl with bytes that are not UTF-8."""
import pytest

from models.cli.main import main

# each command with its picture flag last, the flags it needs besides given dummy values
# (argparse checks every flag's type before it looks at whether --out exists)
COMMANDS = [
    ["graph", "--output"],
    ["graph", "--animate"],
    ["attention", "--out", "run", "--prompt", "to be", "--output"],
    ["gradflow", "-o"],
    ["plot-loss", "--metrics", "run", "--output"],
    ["translate", "graph", "--output"],
    ["translate", "run", "--out", "run", "3 march 1999", "--attention"],
]


def usage_error(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, f"expected exit 2 (a usage error); got {code} with {err!r}"
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_picture_path_inside_a_file_is_a_usage_error_naming_the_file(capsys, tmp_path, argv):
    notes = tmp_path / "file.txt"
    notes.write_text("not a folder", encoding="utf-8")
    err = usage_error(capsys, argv + [str(notes / "g.svg")])
    assert f"{argv[-1]}" in err and f"lies inside the file {str(notes)!r}" in err, (
        f"expected the flag and the file named; got {err!r}")


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_an_empty_picture_name_is_a_usage_error(capsys, argv):
    err = usage_error(capsys, argv + [""])
    assert err.endswith("must name a picture file, e.g. graph.svg; got ''"), err


def test_a_directory_given_as_the_picture_is_a_usage_error_suggesting_a_file_in_it(capsys,
                                                                                     tmp_path):
    err = usage_error(capsys, ["graph", "--output", str(tmp_path)])
    assert f"{str(tmp_path)!r} names a directory" in err and "graph.svg" in err, err


def test_plot_loss_reads_bytes_that_are_not_utf8_as_start_metrics_does(capsys, tmp_path):
    # start_metrics (models/training/run.py) decodes with errors="replace": a stray byte inside a
    # JSON string keeps its line, a line it breaks is not JSON and is named with its file
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"iter": 0, "train_loss": 4.0, "val_loss": 4.1, "note": "\xff"}\n'
                     b'{"iter": 10, "train_loss": 3.0, "val_loss": 3.2}\n')
    assert main(["plot-loss", "--metrics", str(path), "-o", str(tmp_path / "loss.png")]) == 0
    assert "2 evaluations" in capsys.readouterr().out
    path.write_bytes(b'{"iter": 0, "train_loss": 4.0, "val_loss": 4.1}\n\xff\xfe\n')
    code = main(["plot-loss", "--metrics", str(path), "-o", str(tmp_path / "loss.png")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and err.endswith(f"{str(path)}, line 2: not JSON (Expecting value)"), (
        f"expected exit 1 naming the file and line 2; got {code} with {err!r}")
