"""What `microtensor train` does around nanoGPT's loop, behind one named call each in train.py:
the TrainingRun's bookkeeping (the checkpoint's info, the progress bar, Ctrl-C, a NaN loss),
--processes > 1 (each batch's rows split over processes, data_parallel.py), --log-grad-norms
(each module's ‖∂L/∂θ‖ before clipping, into metrics.jsonl) and --explore (on_evaluation).
"""
from contextlib import ExitStack

import nn

from .data_parallel import data_parallel


class TrainExtras:
    """train()'s bookkeeping around nanoGPT's loop: `start` hands the model, the optimizer and
    the checkpoint's info to the TrainingRun; entered, it holds the run's progress bar, Ctrl-C
    handling and --out lock (run.running) and the worker processes of --processes;
    `parallel`: a DataParallel, or None for one process; `batch_loss`: its split loss for
    estimate_loss, or None; `after_backward` checks the loss and notes --log-grad-norms';
    `record_evaluation` records one and calls on_evaluation(model, it).
    ValueError: a processes count out of range (data_parallel.share_sizes)."""

    def __init__(self, model, config, processes=1, log_grad_norms=False, on_evaluation=None):
        self.model, self.config, self.processes = model, config, processes
        self.log_grad_norms, self.on_evaluation = log_grad_norms, on_evaluation
        self.parallel = data_parallel(model, processes, (config.batch_size, config.block_size),
                                      reseed=config.dropout > 0)  # None for one process
        self.batch_loss = self.parallel.loss if self.parallel else None
        self.grad_norms = None  # the latest step's, once logged
        self.run = self.first_iter = self._exit = None

    def start(self, run, optimizer, tokenizer, data, train_ids, val_ids, progress=True):
        """run.start with the checkpoint's info {tokenizer's, "train_config", "data",
        "processes"}, printing what trains; returns the first iteration: 0, or the resumed one."""
        info = {**tokenizer.to_info(), "train_config": self.config.to_dict(), "data": data,
                "processes": self.processes}
        about = (f"GPT on {data['source']} ({len(train_ids):,} train / {len(val_ids):,} val "
                 f"{tokenizer.unit}, vocabulary {tokenizer.vocab_size})")
        self.run = run
        self.first_iter = run.start(self.model, optimizer, info, about, progress)
        return self.first_iter

    def __enter__(self):
        with ExitStack() as stack:  # left in reverse: the bar and --out's lock, then the workers
            if self.parallel is not None:
                stack.enter_context(self.parallel)
            stack.enter_context(self.run.running(self.first_iter, "train"))
            self._exit = stack.pop_all()
        return self

    def __exit__(self, *exc_info):
        self._exit.__exit__(*exc_info)

    def after_backward(self, loss, it):
        """NonFiniteLoss for a NaN or infinite training loss, before a step spoils the weights;
        then, with --log-grad-norms, each module's ‖∂L/∂θ‖ before clipping."""
        self.run.check_finite(loss, it, "training loss")
        if self.log_grad_norms:
            self.grad_norms = nn.utils.grad_norms_by_module(self.model)

    def record_evaluation(self, it, losses):
        """run.record_evaluation of {"train", "val"} losses at iteration `it` (print, append to
        metrics.jsonl with the latest grad_norms once noted, save the checkpoint and the best
        model); then on_evaluation(model, it)."""
        logged = {"grad_norms": self.grad_norms} if self.grad_norms else None
        self.run.record_evaluation(it, losses["train"], losses["val"], logged=logged)
        if self.on_evaluation is not None:
            self.on_evaluation(self.model, it)
