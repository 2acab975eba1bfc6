"""viz: pictures of what microtensor computed: graphs of ops and gradient flow, attention maps, training curves."""
from .graph import draw_graph
from .plots import attention_heatmap, gradient_flow, loss_curve, read_metrics
from .save import save
from .trace import trace

__all__ = ["draw_graph", "save", "trace", "attention_heatmap", "gradient_flow", "loss_curve",
           "read_metrics"]
