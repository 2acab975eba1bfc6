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
