"""Time two checkouts of microtensor side by side: the baby training step and KV-cache generation.

    git worktree add /tmp/before HEAD~3          # or any copy of an older tree
    python benchmarks/compare_trees.py /tmp/before .          # before, after
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/compare_trees.py /tmp/before .

For a change that should not cost speed: each tree runs in its own worker processes (its
own imports), the parent alternates them (A B B A ...) so load that comes and goes hits
both, and reports medians and the median of the per-round ratios. Each worker times its
own CPU time (one thread), which waiting for a core that another program holds does not
inflate: on a shared machine it holds still where the wall time does not. Only the public API is
used (GPT, AdamW, clip_grad_norm_, generate), so any two trees of the same API compare.
One step: forward with cross-entropy, zero_grad, backward, clip, AdamW on nanoGPT's baby
GPT (4 layers, 4 heads, 128 wide, block 64, batch 12, no biases), one thread, with freed
memory kept for reuse as the train command keeps it (`microtensor.memory`).
Generation: 300 characters from a one-character prompt, with the cache (prefill, decode,
then the sliding window past the 64-character block).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WORKER = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
threadpool_limits(1)
import microtensor, microtensor.memory, nn
from models import GPT, GPTConfig
kind, n = sys.argv[1], int(sys.argv[2])
microtensor.manual_seed(0)
model = GPT(GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128, bias=False))
rng = np.random.default_rng(0)
times = []
if kind == "step":
    microtensor.memory.keep_freed_memory()  # as the train command does
    opt = nn.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    def step():
        idx = rng.integers(0, 65, (12, 65))
        _, loss = model(idx[:, :-1], idx[:, 1:])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    for _ in range(3):
        step()
    for _ in range(n):
        t0 = time.process_time(); step(); times.append(time.process_time() - t0)
else:
    model.eval()
    prompt = np.zeros((1, 1), dtype=np.int64)
    model.generate(prompt, 20, 0.8, 200)
    for _ in range(n):
        t0 = time.process_time(); model.generate(prompt, 300, 0.8, 200)
        times.append(time.process_time() - t0)
print(json.dumps(times))
"""


def run(tree, kind, n):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    out = subprocess.run([sys.executable, "-c", WORKER, kind, str(n)], env=env, check=True,
                         capture_output=True, text=True, cwd=os.path.abspath(tree)).stdout
    return statistics.median(json.loads(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=6, help="worker runs per tree and kind")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per worker run")
    ap.add_argument("--generations", type=int, default=3, help="timed generations per run")
    ap.add_argument("--kinds", nargs="+", choices=("step", "generate"),
                    default=["step", "generate"], help="what to time (default: both)")
    args = ap.parse_args()
    from machine import describe  # benchmarks/machine.py
    print(describe())
    for kind, n, unit in (("step", args.steps, "ms per step"),
                          ("generate", args.generations, "ms per 300 chars")):
        if kind not in args.kinds:
            continue
        med = {args.before: [], args.after: []}
        order = [args.before, args.after]
        for _ in range(args.rounds):
            for tree in order:
                med[tree].append(run(tree, kind, n))
            order.reverse()
        ratios = [a / b for a, b in zip(med[args.after], med[args.before])]
        b, a = (1000 * statistics.median(med[t]) for t in (args.before, args.after))
        print(f"{kind:<9} before {b:7.1f}  after {a:7.1f} {unit}; after/before: median of "
              f"{args.rounds} paired rounds {statistics.median(ratios):.3f} "
              f"(range {min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"({time.time() - t0:.0f} s)")
