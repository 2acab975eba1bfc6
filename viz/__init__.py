"""viz: pictures of what microtensor computed: graphs of ops and gradient flow, backprop step by
step, attention maps, training curves, and an HTML explorer that steps through a pass."""
from .animate import backprop_frames, record_backward_order, save_animation
from .explore import explore
from .flow import module_input_grad_norms
from .graph import draw_graph
from .overlay import record_costs
from .plots import attention_heatmap, gradient_flow, loss_curve, read_metrics
from .record import record_steps
from .save import save, save_figure
from .trace import record_grad_norms, trace

__all__ = ["draw_graph", "record_grad_norms", "save", "save_figure", "trace",
           "module_input_grad_norms", "record_backward_order", "backprop_frames",
           "save_animation", "record_costs", "attention_heatmap", "gradient_flow", "loss_curve",
           "read_metrics", "explore", "record_steps"]
