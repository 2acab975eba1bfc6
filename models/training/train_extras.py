"""What `microtensor train` does beyond nanoGPT's loop, behind one named call each in train.py:
--processes > 1 (each batch's rows split over processes, data_parallel.py), --log-grad-norms
(each module's ‖∂L/∂θ‖ before clipping, into metrics.jsonl) and --explore (on_evaluation).
With none of them asked for, nothing here acts.
"""
import nn

from .data_parallel import data_parallel


class TrainExtras:
    """train()'s options, for its loop: entered around it (the worker processes of --processes
    start and stop with it); `parallel`: a DataParallel, or None for one process; `batch_loss`:
    its split loss for estimate_loss, or None; `note_grad_norms()` after backward; `logged()`:
    an evaluation's extra metrics.jsonl fields; `evaluated(it)` calls on_evaluation(model, it).
    ValueError: a processes count out of range (data_parallel.share_sizes)."""

    def __init__(self, model, config, processes=1, log_grad_norms=False, on_evaluation=None):
        self.model, self.log_grad_norms, self.on_evaluation = model, log_grad_norms, on_evaluation
        self.parallel = data_parallel(model, processes, (config.batch_size, config.block_size),
                                      reseed=config.dropout > 0)  # None for one process
        self.batch_loss = self.parallel.loss if self.parallel else None
        self.grad_norms = None  # the latest step's, once logged

    def __enter__(self):
        if self.parallel is not None:
            self.parallel.__enter__()
        return self

    def __exit__(self, *exc_info):
        if self.parallel is not None:
            self.parallel.__exit__(*exc_info)

    def note_grad_norms(self):
        """After backward, before clipping: each module's ‖∂L/∂θ‖ (--log-grad-norms only)."""
        if self.log_grad_norms:
            self.grad_norms = nn.utils.grad_norms_by_module(self.model)

    def logged(self):
        """An evaluation's extra metrics.jsonl fields: {"grad_norms": ...} once noted, or None."""
        return {"grad_norms": self.grad_norms} if self.grad_norms else None

    def evaluated(self, it):
        """After the evaluation at iteration `it` was recorded: on_evaluation(model, it)."""
        if self.on_evaluation is not None:
            self.on_evaluation(self.model, it)
