"""The gallery page and docs/gallery/ agree: every picture shown is there, and remade by
make_gallery.sh; no picture lies there unshown. The docs' commands write where the reader
says: only make_gallery.sh writes into docs/gallery/."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"


def test_every_gallery_picture_is_shown_on_the_gallery_page_and_made_by_make_gallery():
    page = (ROOT / "docs" / "gallery.md").read_text(encoding="utf-8")
    script = (GALLERY / "make_gallery.sh").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(gallery/([^)]+)\)", page))
    made = set(re.findall(r'"\$g/([^"]+)"', script))
    present = {p.name for p in GALLERY.iterdir() if p.suffix in (".svg", ".png", ".gif")}
    assert shown == present, (f"shown but missing: {sorted(shown - present)}; present but "
                              f"not shown: {sorted(present - shown)}")
    assert made == present, (f"not remade by make_gallery.sh: {sorted(present - made)}; "
                             f"made but not kept: {sorted(made - present)}")


def test_no_command_in_the_docs_writes_into_docs_gallery():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    writes = re.compile(r"(--output|-o|--animate|--attention|--out|--to)[ =]+\S*docs/gallery")
    found = [f"{page.name}: {line.strip()}" for page in pages
             for line in page.read_text(encoding="utf-8").splitlines() if writes.search(line)]
    assert not found, f"expected no command writing into docs/gallery/, found: {found}"
