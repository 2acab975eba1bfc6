"""Write a picture to disk: a graph as SVG, PNG or PDF through Graphviz's `dot` (or at least its DOT source), a chart through matplotlib."""
import os

import graphviz

INSTALL_HINT = ("install Graphviz, which provides the `dot` program: `apt-get install graphviz` "
                "(Debian/Ubuntu), `brew install graphviz` (macOS) or `conda install graphviz`")
FORMATS = ("svg", "png", "pdf")


def picture_format(path, allowed=FORMATS):
    """The format named by `path`'s suffix ("g.SVG" -> "svg"); ValueError if it is not in `allowed`.

    Also creates the folder `path` goes into, so that `--output pics/g.svg` just works.
    """
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in allowed:
        raise ValueError(f"cannot tell the picture format from {path!r}: end the file name "
                         f"with {', '.join('.' + f for f in allowed)}")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return fmt


def save(graph, path):
    """Render `graph` (a graphviz.Digraph) to `path`, the format taken from its suffix.

    .svg, .png and .pdf run Graphviz's `dot`; .dot writes the source alone, which needs no
    Graphviz. Returns the path written.
    Raises:
        ValueError: another suffix.
        RuntimeError: `dot` is missing (the DOT source is still written next to `path`,
            same name with suffix .dot, and the message says how to install Graphviz),
            or `dot` failed.
    """
    fmt = picture_format(path, FORMATS + ("dot",))
    if fmt == "dot":
        with open(path, "w", encoding="utf-8") as f:
            f.write(graph.source)
        return path
    try:
        # pipe() hands the source to dot on stdin: no temporary .gv file is left behind
        data = graph.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        stem = os.path.splitext(path)[0]
        with open(stem + ".dot", "w", encoding="utf-8") as f:
            f.write(graph.source)
        raise RuntimeError(f"could not render {path}: Graphviz's `dot` program was not found. "
                           f"The DOT source was written to {stem}.dot; {INSTALL_HINT}") from None
    except graphviz.CalledProcessError as error:
        raise RuntimeError(f"Graphviz's dot failed to render {path}: {error.stderr!r}") from None
    with open(path, "wb") as f:
        f.write(data)
    return path


def save_figure(figure, path, dpi=110):
    """Write a matplotlib Figure (the charts of viz.plots) to `path`: .svg, .png or .pdf.

    Returns the path written; ValueError for another suffix.
    """
    fmt = picture_format(path)
    figure.savefig(path, format=fmt, dpi=dpi)
    return path
