"""Where the baby training step's time goes: milliseconds per op, forward and backward, one thread.

    python benchmarks/op_profile.py [--steps 30] [--threads 1] [--calls 20]

Every `Function` subclass's forward and backward is wrapped with a timer for the run (the
library itself is not changed); the optimizer step and gradient clipping are timed as a
whole; "engine" is the rest of the step: graph bookkeeping, un-broadcasting and summing
gradients, Python between the ops. Each figure is the median over the steps, in CPU time
of this thread (BLAS runs in it at one thread): waiting for a core that another program
holds does not count, so the figures hold still on a shared machine. `--calls N` also lists
the N costliest call sites: op, phase, module and input shapes, with their calls per step.
"""
import argparse
import os
import re
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VOCAB = 65


def function_classes(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from function_classes(sub)


def install_timers(totals, sites=None):
    """Wrap forward/backward of every Function class that defines them; time goes to totals
    ("op phase") and, if given, to sites ((op, phase, module, input shapes) -> [seconds,
    calls]), with the block number left out of the module ("blocks.*.attn"). Noting the site
    takes time of its own, which then shows up as "engine"."""
    from microtensor.autograd import Function

    def wrap(method, phase):
        def timed(self, *args):
            t0 = time.thread_time()
            try:
                return method(self, *args)
            finally:
                totals[f"{self.op} {phase}"] += time.thread_time() - t0

        def timed_site(self, *args):  # timed, and noted under its call site
            t0 = time.thread_time()
            try:
                return method(self, *args)
            finally:
                elapsed = time.thread_time() - t0
                totals[f"{self.op} {phase}"] += elapsed
                shapes = self.input_shapes if phase == "backward" else [a.shape for a in args]
                module = re.sub(r"\.\d+(\.|$)", r".*\1", self.module)
                site = sites[self.op, phase, module, " ".join(map(str, shapes))]
                site[0] += elapsed
                site[1] += 1
        return timed if sites is None else timed_site

    for cls in set(function_classes(Function)):
        for phase in ("forward", "backward"):
            if phase in cls.__dict__:
                setattr(cls, phase, wrap(cls.__dict__[phase], phase))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=0, help="list the N costliest call sites")
    args = ap.parse_args()
    from machine import describe  # benchmarks/machine.py
    print(describe())

    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    import microtensor
    import nn
    from models import GPT, GPTConfig
    from models.training.data import get_batch
    from models.training.run import configure_optimizer
    from models.training.settings import get_preset

    microtensor.memory.keep_freed_memory()  # as the train command does
    cfg = get_preset("baby")
    model = GPT(GPTConfig(vocab_size=VOCAB, block_size=cfg.block_size, n_layer=cfg.n_layer,
                          n_head=cfg.n_head, n_embd=cfg.n_embd, bias=cfg.bias))
    optimizer = configure_optimizer(model, cfg)
    params = model.parameters()
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCAB, 100_000)
    totals = defaultdict(float)
    sites = defaultdict(lambda: [0.0, 0]) if args.calls else None
    install_timers(totals, sites)
    per_step = defaultdict(list)
    for i in range(args.steps + 3):
        x, y = get_batch(ids, cfg.batch_size, cfg.block_size, rng)
        totals.clear()
        t0 = time.thread_time()
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        t1 = time.thread_time()
        nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        t2 = time.thread_time()
        optimizer.step()
        t3 = time.thread_time()
        if i < 3:  # warm-up steps
            if sites is not None:
                sites.clear()
            continue
        totals["clip_grad_norm_"], totals["AdamW step"] = t2 - t1, t3 - t2
        totals["engine"] = (t1 - t0) - sum(v for k, v in totals.items()
                                          if k.endswith(("forward", "backward")))
        totals["step"] = t3 - t0
        for key in set(per_step) | set(totals):
            per_step[key].append(totals.get(key, 0.0))
    med = {k: 1000 * statistics.median(v) for k, v in per_step.items()}
    ops = sorted({k.rsplit(" ", 1)[0] for k in med if k.endswith(("forward", "backward"))},
                 key=lambda op: -(med.get(f"{op} forward", 0) + med.get(f"{op} backward", 0)))
    print(f"baby step, {args.threads} thread(s), median of {args.steps} steps, ms")
    print(f"{'op':<18}{'forward':>9}{'backward':>10}{'total':>8}")
    for op in ops:
        f, b = med.get(f"{op} forward", 0.0), med.get(f"{op} backward", 0.0)
        print(f"{op:<18}{f:>9.2f}{b:>10.2f}{f + b:>8.2f}")
    for key in ("clip_grad_norm_", "AdamW step", "engine", "step"):
        print(f"{key:<37}{med[key]:>8.2f}")
    if args.calls:
        print(f"\nthe {args.calls} costliest call sites, mean ms/step (calls/step): "
              "op, phase, module, input shapes")
        ranked = sorted(sites.items(), key=lambda item: -item[1][0])[:args.calls]
        for (op, phase, module, shapes), (seconds, calls) in ranked:
            print(f"{1000 * seconds / args.steps:>7.2f} ({calls // args.steps:>2})  {op} {phase} "
                  f"{module or '-'}  {shapes}")


if __name__ == "__main__":
    main()
