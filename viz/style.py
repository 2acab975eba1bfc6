"""How numbers become ink and text: edge width and colour on a log scale, node fill colours, and
number formats."""
import math

# slate blue for the smallest gradients, through purple, to deep red for the largest; the
# smallest end is dark enough to read as a connection on a projector
_RAMP = [(0.52, 0.58, 0.72), (0.46, 0.36, 0.72), (0.80, 0.10, 0.15)]
MIN_WIDTH, MAX_WIDTH = 1.4, 6.0  # edge pen widths in points: a 1.4 pt line is plainly visible

FILL = {
    "param": "#d9f0d3",  # learnable weights
    "input": "#e0e0e0",
    "const": "#f5f5f5",
    "op": "#ffffff",
    "module": "#deebf7",  # a collapsed module
    "external": "#ffffff",
    "attention": "#efe3ff",  # the S → A → Z chain of attention
    "residual": "#fdd0a2",
}


def mix(t):
    """The ramp's colour at t in [0, 1] as "#rrggbb"."""
    t = min(max(t, 0.0), 1.0) * (len(_RAMP) - 1)
    i = min(int(t), len(_RAMP) - 2)
    f = t - i
    rgb = [a + (b - a) * f for a, b in zip(_RAMP[i], _RAMP[i + 1])]
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb)


class GradScale:
    """Maps a gradient norm to a position t in [0, 1] by its log10 between the smallest and largest
    seen."""

    def __init__(self, norms):
        logs = [math.log10(n) for n in norms if n is not None and n > 0 and math.isfinite(n)]
        self.lo, self.hi = (min(logs), max(logs)) if logs else (0.0, 0.0)

    def position(self, norm):
        if norm is None or not norm > 0:
            return None
        if self.hi == self.lo:
            return 1.0
        return (math.log10(norm) - self.lo) / (self.hi - self.lo)

    def width(self, t):
        return MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * t

    def edge_attrs(self, norm):
        """graphviz attributes for an edge that carried gradient `norm` (dotted grey if none)."""
        t = self.position(norm)
        if t is None:
            return {"color": "#9e9e9e", "penwidth": f"{MIN_WIDTH:.2f}",
                    "style": "dotted" if norm == 0 else "solid"}
        return {"color": mix(t), "penwidth": f"{self.width(t):.2f}"}

    def samples(self, count=5):
        """[(norm, colour, pen width)] at `count` evenly spaced points of the scale, smallest
        first."""
        if self.hi == self.lo:
            return [(10 ** self.hi, mix(1.0), self.width(1.0))]
        return [(10 ** (self.lo + (self.hi - self.lo) * i / (count - 1)), mix(i / (count - 1)),
                 self.width(i / (count - 1))) for i in range(count)]


def fmt_number(x):
    """A number with 3 significant digits: plain between 0.001 and 1000 ("0.00123", "3.17",
    "123"), else mantissa and power of ten ("1.23e-4", "4.56e3"). Exact zero reads "0"."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    mantissa, exponent = f"{x:.2e}".split("e")
    if -3 <= int(exponent) < 3:
        return f"{float(f'{x:.2e}'):.3g}"
    return f"{mantissa}e{int(exponent)}"


def fmt_count(n, unit):
    """A count with an SI prefix and 3 significant digits: 4194304 FLOPs -> "4.19 MFLOP"."""
    for prefix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size * 0.9995:
            return f"{n / size:.3g} {prefix}{unit}"
    return f"{n:g} {unit}"


def fmt_norm(norm):
    return "" if norm is None else f"‖g‖ {fmt_number(norm)}"


def fmt_shape(shape):
    return "[" + ",".join(str(n) for n in shape) + "]"
