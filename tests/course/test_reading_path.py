"""The reading path's table (README and both reading guides) names files that exist, with
their lengths: a stated length stays within 10% (at least 10 lines) of the file's."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| \d+ \| (?P<files>[^|]+) \| (?P<lines>[\d, ]+) \|")


def path_rows(page):
    """[(path, stated lines)] of the page's reading-path table, in order."""
    rows = []
    for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if not match:
            continue
        names = re.findall(r"`([^`]+)`", match["files"])
        counts = [int(n) for n in match["lines"].split(",")]
        assert len(names) == len(counts), f"{page}: {len(names)} files, {len(counts)} lengths"
        folder = pathlib.PurePosixPath(names[0]).parent
        rows += [(str(folder / n) if "/" not in n else n, c) for n, c in zip(names, counts)]
    return rows


@pytest.mark.parametrize("page", ["README.md", "docs/reading-guide.md",
                                  "docs/reading-guide.zh.md"])
def test_the_reading_path_lists_existing_files_with_their_lengths(page):
    rows = path_rows(page)
    assert len(rows) >= 20, f"{page}: expected the reading path's table, found {rows}"
    for path, stated in rows:
        actual = len((ROOT / path).read_text(encoding="utf-8").splitlines())
        assert abs(actual - stated) <= max(10, stated // 10), (
            f"{page}: {path} is listed with {stated} lines, has {actual}")


def test_the_guides_list_the_same_path_as_the_readme():
    readme = path_rows("README.md")
    for page in ("docs/reading-guide.md", "docs/reading-guide.zh.md"):
        assert path_rows(page) == readme, f"{page}'s reading path differs from the README's"


def test_the_exercises_workspace_copies_the_readme_reading_path():
    from models.exercises.catalog import READING_PATH
    readme = [path for path, _ in path_rows("README.md")]
    missing = [path for path in readme if path not in READING_PATH]
    assert not missing, (f"models/exercises/catalog.py's READING_PATH lacks {missing} of the "
                         f"README's reading path; expected every file of it")


def test_each_page_states_the_path_s_total_as_the_sum_of_its_rows():
    """Issue 31: the README says the path's total; it is the sum of the table's lengths."""
    for page in ("README.md", "docs/reading-guide.md", "docs/reading-guide.zh.md"):
        stated = sum(lines for _, lines in path_rows(page))
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        totals = re.findall(r"(?:The path is|路线共) ([\d,]+)", text)
        assert totals and int(totals[0].replace(",", "")) == stated, (
            f"{page}: expected the path's total {stated:,} stated after the table, "
            f"found {totals}")


# Issue 31's measure of the path: each idea of the chapter, and how its first line is found.
IDEAS = {
    "Function and backward()": r"class Function\b[\s\S]*def backward\(",
    "matmul": r"class MatMul\b",
    "softmax": r"class Softmax\b",
    "layer norm": r"class LayerNorm\w*\b",
    "ReLU or GELU": r"class (ReLU|GELU|Relu|Gelu)\b",
    "masked fill": r"class MaskedFill\b|def masked_fill\b",
    "causal mask": r"def causal\w*\(|causal_mask\s*=|tril\(",
    "attention": (r"def scaled_dot_product_attention\b"
                  r"|class (MultiHeadAttention|CausalSelfAttention)\b"),
    "GPT": r"class GPT\b",
    "AdamW step": r"class AdamW\b[\s\S]*def step\(",
    "training loop": r"\.backward\(\)[\s\S]{0,800}\.step\(\)",
}
PATH_LINES, ATTENTION_BY = 2000, 1200  # one evening's reading; the chapter's subject by 1,200


def test_the_path_holds_every_idea_of_the_chapter_in_2000_lines_with_attention_by_1200():
    """Issue 31: read in the README's order, the path holds the whole chapter (the causal mask,
    an AdamW step and the training loop included) in at most 2,000 lines, and reaches
    attention by line 1,200. The numbers are the files' own lines, not the table's."""
    first, at = {}, 0
    for path in dict.fromkeys(path for path, _ in path_rows("README.md")):
        text = (ROOT / path).read_text(encoding="utf-8")
        for idea, pattern in IDEAS.items():
            match = idea not in first and re.search(pattern, text)
            if match:
                first[idea] = at + text[:match.start()].count("\n") + 1
        at += len(text.splitlines())
    missing = [idea for idea in IDEAS if idea not in first]
    assert not missing, f"expected every idea of the chapter on the path; missing {missing}"
    assert at <= PATH_LINES, f"expected the path to be at most {PATH_LINES} lines, got {at}"
    assert first["attention"] <= ATTENTION_BY, (
        f"expected attention by line {ATTENTION_BY}, got line {first['attention']} ({first})")
