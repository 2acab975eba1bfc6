"""viz: pictures of what microtensor computed: graphs of ops and gradient flow, attention maps, training curves."""
from .graph import draw_graph
from .save import save
from .trace import trace

__all__ = ["draw_graph", "save", "trace"]
