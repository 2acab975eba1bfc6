"""`microtensor train --explore FILE`: the page is rewritten at every evaluation with that step's
graph and the gradient-norm curves so far, and the run trains exactly as it would without it."""
import json
import re

import numpy as np
from mt_testing import needs_dot

from models.cli.main import main
from models.training.checkpoint import load_checkpoint

pytestmark = needs_dot

SMALL = ["--preset", "tiny", "--n-layer", "1", "--n-embd", "16", "--n-head", "2",
         "--block-size", "16", "--batch-size", "4", "--max-iters", "6", "--eval-interval", "3",
         "--eval-iters", "2", "--quiet"]


def page_data(path):
    text = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script id="mt-data" type="application/json">(.*?)</script>',
                                text, re.S).group(1).replace("<\\/", "</"))


def test_train_explore_rewrites_the_page_and_changes_nothing_trained(tmp_path):
    page = tmp_path / "watch.html"
    assert main(["train", *SMALL, "--out", str(tmp_path / "with"), "--explore", str(page)]) == 0
    assert main(["train", *SMALL, "--out", str(tmp_path / "without"), "--log-grad-norms"]) == 0
    with_page, _, _ = load_checkpoint(tmp_path / "with", which="latest")
    plain, _, _ = load_checkpoint(tmp_path / "without", which="latest")
    for (name, a), (_, b) in zip(with_page.state_dict().items(), plain.state_dict().items()):
        assert np.array_equal(a, b), f"{name} differs: writing the page changed the training"
    data = page_data(page)
    assert "at iter 6" in data["title"], data["title"]
    metrics = [json.loads(line) for line in (tmp_path / "with" / "metrics.jsonl").open()]
    logged = [m for m in metrics if "grad_norms" in m]
    assert data["curves"]["iter"] == [m["iter"] for m in logged] == [3, 6]
    assert data["curves"]["modules"]["blocks.0"] == [m["grad_norms"]["blocks.0"] for m in logged]
    assert data["forward"] and data["backward"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["watch.html", "with", "without"]


def test_train_explore_refuses_a_file_it_did_not_write_before_training(tmp_path, capsys):
    page = tmp_path / "notes.html"
    page.write_text("mine", encoding="utf-8")
    status = main(["train", *SMALL, "--out", str(tmp_path / "run"), "--explore", str(page)])
    assert status == 1 and "refusing to overwrite" in capsys.readouterr().err
    assert page.read_text(encoding="utf-8") == "mine"
    assert not (tmp_path / "run").exists(), "nothing was written into --out"
