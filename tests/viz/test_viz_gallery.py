"""The README's gallery and docs/gallery/ agree: every picture shown is there, and remade by
make_gallery.sh; no picture lies there unshown."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"


def test_every_gallery_picture_is_shown_in_the_readme_and_made_by_make_gallery():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    script = (GALLERY / "make_gallery.sh").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(docs/gallery/([^)]+)\)", readme))
    made = set(re.findall(r'"\$g/([^"]+)"', script))
    present = {p.name for p in GALLERY.iterdir() if p.suffix in (".svg", ".png", ".gif")}
    assert shown == present, (f"shown but missing: {sorted(shown - present)}; present but "
                              f"not shown: {sorted(present - shown)}")
    assert made == present, (f"not remade by make_gallery.sh: {sorted(present - made)}; "
                             f"made but not kept: {sorted(made - present)}")
