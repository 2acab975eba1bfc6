"""Every relative link in README.md and docs/**/*.md names a file or folder of the repository
(links to the web and to an anchor on the same page are not followed)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def relative_links(text):
    """The link targets of a Markdown text outside fenced code blocks, without #anchors,
    leaving out web addresses and same-page anchors."""
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue
        yield target.split("#", 1)[0].split("?", 1)[0]


def test_relative_links_are_found_and_web_links_are_not():
    text = ("[a](docs/usage.md#train) ![b](gallery/x.svg) [c](https://example.org) [d](#top)\n"
            "```\n[e](inside/code.md)\n```\n")
    assert list(relative_links(text)) == ["docs/usage.md", "gallery/x.svg"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file(page):
    dead = [target for target in relative_links(page.read_text(encoding="utf-8"))
            if not (page.parent / target).exists()]
    assert not dead, f"{page.relative_to(ROOT)}: expected every link to name a file, " \
                     f"these do not: {dead}"
