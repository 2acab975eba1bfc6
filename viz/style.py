"""How gradient size becomes ink: edge width and colour on a log scale, and the colours of node kinds."""
import math

# light grey-blue for tiny gradients, through purple, to deep red for the largest
_RAMP = [(0.78, 0.82, 0.90), (0.46, 0.42, 0.75), (0.80, 0.10, 0.15)]

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


def _mix(t):
    t = min(max(t, 0.0), 1.0) * (len(_RAMP) - 1)
    i = min(int(t), len(_RAMP) - 2)
    f = t - i
    rgb = [a + (b - a) * f for a, b in zip(_RAMP[i], _RAMP[i + 1])]
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb)


class GradScale:
    """Maps a gradient norm to a position t in [0, 1] by its log10 between the smallest and largest seen."""

    def __init__(self, norms):
        logs = [math.log10(n) for n in norms if n is not None and n > 0 and math.isfinite(n)]
        self.lo, self.hi = (min(logs), max(logs)) if logs else (0.0, 0.0)

    def position(self, norm):
        if norm is None or not norm > 0:
            return None
        if self.hi == self.lo:
            return 1.0
        return (math.log10(norm) - self.lo) / (self.hi - self.lo)

    def edge_attrs(self, norm):
        """graphviz attributes for an edge that carried gradient `norm` (dotted grey if none)."""
        t = self.position(norm)
        if t is None:
            return {"color": "#9e9e9e", "penwidth": "0.8", "style": "dotted" if norm == 0 else "solid"}
        return {"color": _mix(t), "penwidth": f"{0.6 + 4.4 * t:.2f}"}

    def legend(self):
        return (f"edge width and colour: the ‖∂L/∂x‖ sent back along it, log scale\n"
                f"from {10 ** self.lo:.1e} (thin, grey) to {10 ** self.hi:.1e} (thick, red); "
                f"‖g‖ in a box: ‖∂L/∂(its output)‖")


def fmt_norm(norm):
    return "" if norm is None else f"‖g‖ {norm:.2e}"


def fmt_shape(shape):
    return "[" + ",".join(str(n) for n in shape) + "]"
