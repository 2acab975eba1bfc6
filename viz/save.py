"""Write a picture to disk: a graph as SVG, PNG or PDF through Graphviz's `dot` (or at least its DOT
source), a chart through matplotlib."""
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


def save(graph, path, dpi=None):
    """Render `graph` (a graphviz.Digraph) to `path`, the format taken from its suffix.

    .svg, .png and .pdf run Graphviz's `dot`; .dot writes the source alone, which needs no
    Graphviz. `dpi` sets a PNG's pixels per inch (Graphviz's default is 96; a 16:9 graph,
    13.33 inches wide, is 1920 pixels wide at 144); SVG and PDF scale freely and ignore it.
    Returns the path written.
    Raises:
        ValueError: another suffix.
        RuntimeError: `dot` is missing (the DOT source is still written next to `path`,
            same name with suffix .dot, and the message says how to install Graphviz),
            or `dot` failed.
    """
    fmt = picture_format(path, FORMATS + ("dot",))
    if dpi is not None and not dpi > 0:
        raise ValueError(f"dpi must be > 0; got {dpi}")
    if fmt == "png" and dpi is not None:
        graph = graph.copy()
        graph.attr(dpi=f"{dpi:g}")
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


def save_figure(figure, path, dpi=110, size=None):
    """Write a matplotlib Figure (the charts of viz.plots) to `path`: .svg, .png or .pdf.

    `size` resizes the figure first: "16:9" (a 13.33-inch slide), "WxH" inches or a pair, as
    `page_size` reads it; at dpi 144 a 16:9 PNG is 1920 x 1080 pixels.
    Returns the path written; ValueError for another suffix or size.
    """
    fmt = picture_format(path)
    if size is not None:
        figure.set_size_inches(*page_size(size))
    figure.savefig(path, format=fmt, dpi=dpi)
    return path


SLIDE_WIDTH = 40 / 3  # inches: PowerPoint's and Keynote's 16:9 widescreen slide is 13.33 x 7.5


def page_size(size):
    """(width, height) in inches from "16:9" / "4:3" (a ratio: a slide 13.33 inches wide),
    "WxH" (inches, e.g. "10x5.625") or a (width, height) pair.

    Raises ValueError naming the value when it is none of these or not positive.
    """
    try:
        if isinstance(size, str) and ":" in size:
            w, h = (float(v) for v in size.split(":"))
            w, h = SLIDE_WIDTH, SLIDE_WIDTH * h / w
        elif isinstance(size, str):
            w, h = (float(v) for v in size.lower().split("x"))
        else:
            w, h = (float(v) for v in size)
    except (TypeError, ValueError):
        w = h = None
    if not (w and h and w > 0 and h > 0):
        raise ValueError(f"size must be a ratio such as '16:9', inches 'WxH' such as "
                         f"'10x5.625', or a (width, height) pair; got {size!r}")
    return w, h
