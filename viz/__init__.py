"""viz: pictures of what microtensor computed: graphs of ops and gradient flow, attention maps, training curves."""
from .flow import module_input_grad_norms
from .graph import draw_graph
from .plots import attention_heatmap, gradient_flow, loss_curve, read_metrics
from .save import save, save_figure
from .trace import record_grad_norms, trace

__all__ = ["draw_graph", "record_grad_norms", "save", "save_figure", "trace", "module_input_grad_norms",
           "attention_heatmap", "gradient_flow", "loss_curve", "read_metrics"]
