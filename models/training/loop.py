"""The training loop every trainer shares: AdamW steps with warmup + cosine decay and
clipping, a tqdm bar, and SIGINT/SIGTERM stopping it at a step boundary (AdamW: Loshchilov
& Hutter 2019, nn/optim/adamw.py; the schedule: nanoGPT's, nn/optim/schedule.py).

`TrainingLoop` is the half of `run.TrainingRun` that trains; the other half (run.py) owns
the --out directory: resume, saving, metrics.jsonl. A signal only sets `stop_signal`; the
loop stops at the next step boundary, so the saved state is one a run passes through, and
resuming it gives the same weights as never stopping. A second Ctrl-C stops at once
without saving (the last checkpoint stays).
"""
import signal
import threading
import time
from contextlib import contextmanager

from tqdm import tqdm

import nn

SIGNALS = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


def backward_of(batch_loss):
    """The `forward_backward` of the loop from batch_loss(), which returns a batch's loss (a
    scalar Tensor): it backpropagates that loss and returns its value (models/training/data_parallel.py
    makes another, which splits the batch over processes)."""
    def forward_backward():
        loss = batch_loss()
        loss.backward()
        return loss.item()
    return forward_backward


class Interrupted(KeyboardInterrupt):
    """Training stopped by a signal after saving its latest state.

    exit_status is the shell's 128 + signal number: 130 for SIGINT, 143 for SIGTERM.
    """

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum, self.exit_status = signum, 128 + signum


class TrainingLoop:
    """The loop of a training run: `step`, `loop`, and the signals that stop it.

    The base of run.TrainingRun, which supplies what the loop reads and saves: `model` and
    `optimizer` (from `start`), `out_dir`, `resuming`, `stop_signal` (None until a signal),
    `saved_iter`, `last_eval`, `best_val_loss`, and the methods `check_finite`, `save_state`
    and `elapsed`.
    """

    @contextmanager
    def signals(self):
        """While inside, SIGINT and SIGTERM set `stop_signal` instead of stopping the process.

        Only the main thread can install handlers; elsewhere this does nothing. The
        previous handlers come back on leaving.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum, frame):
            if self.stop_signal is not None:  # asked twice: stop now, without saving
                raise KeyboardInterrupt
            self.stop_signal = signum
            print(f"\n{SIGNALS[signum]}: stopping after this step and saving the latest state "
                  "(Ctrl-C again: quit at once, without saving)", flush=True)

        previous = {s: signal.signal(s, handler) for s in SIGNALS}
        try:
            yield
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

    def interrupted(self, it):
        """The Interrupted exception to raise once the state of iteration `it` is saved."""
        name = SIGNALS[self.stop_signal]
        return Interrupted(self.stop_signal, f"{name} at iter {it}: latest state saved in "
                                             f"{self.out_dir}; continue with --resume")

    def step(self, it, config, forward_backward, after_backward=None):
        """One AdamW step at iteration `it`; returns (the loss before it, the learning rate).

        The rate follows nn.optim.warmup_cosine_lr over config.lr_decay_iters (default
        config.max_iters); forward_backward() draws a batch, computes its loss and the
        gradients, and returns the loss (a float; `backward_of` makes one);
        after_backward(), when given, sees the gradients before clipping to
        config.grad_clip (0: off). A non-finite loss raises NonFiniteLoss before the step
        spoils the weights.
        """
        lr = nn.optim.warmup_cosine_lr(it, config.learning_rate, config.min_lr,
                                       config.warmup_iters,
                                       config.lr_decay_iters or config.max_iters)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad()
        loss_value = forward_backward()
        self.check_finite(loss_value, it, "training loss")
        if after_backward is not None:
            after_backward()
        if config.grad_clip > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
        self.optimizer.step()
        return loss_value, lr

    def loop(self, it, config, forward_backward, evaluate, desc, progress=True,
             tokens_per_step=None, after_backward=None):
        """Train from iteration `it` to config.max_iters, one `step` at a time, with a tqdm bar.

        evaluate(it) runs at iteration 0, every config.eval_interval and at the end (not
        again for the state a resume starts from) and must end by calling
        self.record_evaluation (which logs the line and saves). A signal stops the loop at
        the next step boundary: the state is saved and run.Interrupted raised. tokens_per_step
        adds a smoothed tokens/s to the bar. Returns the last evaluation's record with
        "best_val_loss" and the total "elapsed_s".
        """
        bar = tqdm(total=config.max_iters, initial=it, desc=desc, unit="it",
                   disable=not progress, dynamic_ncols=True)
        evaluated = it if self.resuming else None  # a saved state has had its evaluation
        tokens_per_s = None
        with self.signals():
            try:
                while True:
                    if ((it % config.eval_interval == 0 or it == config.max_iters)
                            and it != evaluated):
                        evaluate(it)
                        evaluated = it
                    if it == config.max_iters:
                        break
                    if self.stop_signal is not None:  # a step boundary: what a resume needs
                        if self.saved_iter != it:
                            self.save_state(it)
                        bar.close()
                        raise self.interrupted(it)
                    step_start = time.perf_counter()
                    loss_value, lr = self.step(it, config, forward_backward, after_backward)
                    it += 1
                    postfix = {"loss": f"{loss_value:.4f}", "lr": f"{lr:.2e}"}
                    if tokens_per_step is not None:
                        rate = tokens_per_step / (time.perf_counter() - step_start)
                        tokens_per_s = rate if tokens_per_s is None else (
                            0.9 * tokens_per_s + 0.1 * rate)
                        postfix["tok_s"] = f"{tokens_per_s:,.0f}"
                    bar.update(1)
                    bar.set_postfix(postfix, refresh=False)
            finally:
                bar.close()
        return dict(self.last_eval, best_val_loss=self.best_val_loss, elapsed_s=self.elapsed())
