"""Write a graph picture to disk: SVG, PNG or PDF through Graphviz's `dot`, or at least the DOT source."""
import os

import graphviz

INSTALL_HINT = ("install Graphviz, which provides the `dot` program: `apt-get install graphviz` "
                "(Debian/Ubuntu), `brew install graphviz` (macOS) or `conda install graphviz`")


def save(graph, path):
    """Render `graph` to `path`, the format taken from its suffix (.svg, .png, .pdf or .dot).

    Returns the path written. Raises ValueError for another suffix, and RuntimeError when
    `dot` is missing, after writing the DOT source next to `path` so nothing is lost.
    """
    stem, suffix = os.path.splitext(path)
    fmt = suffix.lstrip(".").lower()
    if fmt == "dot":
        with open(path, "w", encoding="utf-8") as f:
            f.write(graph.source)
        return path
    if fmt not in ("svg", "png", "pdf"):
        raise ValueError(f"save: cannot tell the format from {path!r}; use .svg, .png, .pdf or .dot")
    try:
        graph.render(outfile=path, format=fmt, cleanup=True)
    except graphviz.ExecutableNotFound:
        with open(stem + ".dot", "w", encoding="utf-8") as f:
            f.write(graph.source)
        raise RuntimeError(f"could not render {path}: Graphviz's `dot` program was not found. "
                           f"The DOT source was written to {stem}.dot; {INSTALL_HINT}") from None
    return path
