"""Time the baby training step in microtensor and, side by side, in PyTorch eager: the same GPT.

    python benchmarks/train_speed.py                      # 1 and 2 threads, 60 timed steps each;
                                  # at 2, also ours on 2 processes (training/data_parallel.py)
    python benchmarks/train_speed.py --steps 1000 --threads 1   # is RSS flat over 1000 steps?
    python benchmarks/train_speed.py --busy               # with one busy process beside

One step, as `microtensor train` runs it: forward with cross-entropy, zero_grad, backward,
clip the global gradient norm, AdamW. The model is nanoGPT's baby config (`--preset baby`:
4 layers, 4 heads, 128 wide, no biases, tied LM head, GPT-2 init), in PyTorch written as
nanoGPT writes it (fused QKV projection, scaled_dot_product_attention).
Noise: each framework runs in its own worker process (its own BLAS threads and peak RSS);
the parent alternates chunks of steps between them (A B B A ...) so load that comes and
goes hits both, and reports medians and the median of the per-chunk ratios.
With --processes N, our row is the data-parallel step (training/data_parallel.py), its RSS the
parent's alone.
GEMM floor: the matrix-product FLOPs `microtensor.profile()` counts for the forward, times 3
(each product has two of the same size in backward), over the rate numpy's sgemm reaches on
those same shapes (timed in our worker between chunks): what the step would cost if nothing
but its matrix products took time.
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VOCAB = 65  # tinyshakespeare's characters


def rss_mib():
    """Resident memory now (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mib()


def peak_rss_mib():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def timed(fn, repeats, *args):
    """Median seconds of fn(*args) over `repeats` calls."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def product_and_gradients(a, b, g):
    """A @ B and its backward products G @ Bᵀ, Aᵀ @ G (transposes as views, as BLAS takes them)."""
    return a @ b, g @ np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2) @ g


def gemm_floor_seconds(shapes, repeats=5):
    """Seconds numpy's sgemm needs for the step's products: each forward A@B and its G@Bᵀ, Aᵀ@G.

    shapes: the (a, b) operand shapes of every matmul; a stack times one matrix is one 2-D
    product of all the stack's rows, as MatMul runs a Linear.
    """
    rng, total, cache = np.random.default_rng(0), 0.0, {}
    for a_shape, b_shape in shapes:
        if len(b_shape) == 2 and len(a_shape) > 2:
            a_shape = (math.prod(a_shape[:-1]), a_shape[-1])
        if (a_shape, b_shape) not in cache:
            a, b = (rng.standard_normal(s).astype(np.float32) for s in (a_shape, b_shape))
            g = np.ones_like(a @ b)
            cache[a_shape, b_shape] = timed(product_and_gradients, repeats, a, b, g)
        total += cache[a_shape, b_shape]
    return total


def microtensor_worker(threads, cfg, processes=1):
    """A step function for our GPT and, per chunk, the GEMM floor measured at the same threads
    (processes > 1: data parallel, one BLAS thread per process, the floor too)."""
    import microtensor
    import nn
    from microtensor.hooks import register_forward_hook
    from models import GPT, GPTConfig
    from models.training.data_parallel import DataParallel
    from models.training.run import configure_optimizer

    microtensor.memory.keep_freed_memory()  # as the train command does
    model = GPT(GPTConfig(vocab_size=VOCAB, block_size=cfg.block_size, n_layer=cfg.n_layer,
                          n_head=cfg.n_head, n_embd=cfg.n_embd, bias=cfg.bias))
    optimizer = configure_optimizer(model, cfg)
    params = model.parameters()
    parallel = DataParallel(model, lambda x, y: model(x, y)[1], processes,
                            (cfg.batch_size, cfg.block_size)).__enter__()  # closed at exit

    def step(x, y):
        optimizer.zero_grad()
        loss = parallel.forward_backward(x, y)
        nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        optimizer.step()
        return loss

    def floor(x, y):
        shapes = []

        def note(fn, inputs, output):
            if fn.op == "matmul":
                shapes.append(tuple(t.shape for t in inputs))

        with microtensor.no_grad(), microtensor.profile() as prof, register_forward_hook(note):
            model(x, y)
        return 3 * prof.flops(op="matmul"), gemm_floor_seconds(shapes)

    return step, floor, "microtensor" + (f" x{processes} proc" if processes > 1 else "")


def torch_worker(threads, c):
    import torch
    from torch import nn as tnn
    from torch.nn import functional as F

    torch.set_num_threads(threads)
    C, H, L = c.n_embd, c.n_head, c.n_layer

    class Block(tnn.Module):  # nanoGPT's model.py Block, without dropout and biases
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = tnn.LayerNorm(C, bias=False), tnn.LayerNorm(C, bias=False)
            self.c_attn, self.c_proj = tnn.Linear(C, 3 * C, False), tnn.Linear(C, C, False)
            self.c_fc, self.mlp_proj = tnn.Linear(C, 4 * C, False), tnn.Linear(4 * C, C, False)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2)
                       for t in self.c_attn(self.ln_1(x)).split(C, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class TorchGPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = tnn.Embedding(VOCAB, C), tnn.Embedding(c.block_size, C)
            self.blocks = tnn.ModuleList(Block() for _ in range(L))
            self.ln_f = tnn.LayerNorm(C, bias=False)
            for name, p in self.named_parameters():  # GPT-2 init, as models.gpt
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                    tnn.init.normal_(p, 0.0, std)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.T  # tied LM head
            return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))

    torch.manual_seed(0)
    model = TorchGPT()
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": c.weight_decay},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=c.learning_rate, betas=(c.beta1, c.beta2))

    def step(x, y):
        loss = model(torch.from_numpy(x), torch.from_numpy(y))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, c.grad_clip)
        optimizer.step()
        return loss.item()

    return step, None, f"torch {torch.__version__}"


def serve(name, threads, batches_path, processes):
    """Worker loop: 'run K' answers the times of K steps (and the floor), 'quit' the peak RSS."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads)  # numpy's BLAS; torch sets its own below
    batches = np.load(batches_path)
    xs, ys = batches["x"], batches["y"]
    cfg = argparse.Namespace(**json.loads(str(batches["cfg"])))  # the preset's settings
    if name == "ours":
        step, floor, label = microtensor_worker(threads, cfg, processes)
    else:
        step, floor, label = torch_worker(threads, cfg)
    print(json.dumps({"label": label}), flush=True)
    i = 0
    for line in sys.stdin:
        if line.startswith("quit"):
            print(json.dumps({"peak_rss": peak_rss_mib()}), flush=True)
            return
        times = []
        for _ in range(int(line.split()[1])):
            t0 = time.perf_counter()
            step(xs[i % len(xs)], ys[i % len(ys)])
            times.append(time.perf_counter() - t0)
            i += 1
        reply = {"times": times, "rss": rss_mib()}
        if floor is not None:
            reply["flops"], reply["floor"] = floor(xs[0], ys[0])
        print(json.dumps(reply), flush=True)


class Worker:
    def __init__(self, name, threads, batches_path, processes=1):
        env = dict(os.environ, PYTHONPATH=ROOT)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", name, "--threads", str(threads),
             "--processes", str(processes), "--batches", batches_path], env=env, text=True,
            cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.label = self.ask(None)["label"]
        self.times, self.chunks, self.rss, self.floors = [], [], [], []

    def ask(self, command):
        if command:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def run(self, k, record=True):
        reply = self.ask(f"run {k}")
        if record:
            self.times += reply["times"]
            self.chunks.append(statistics.median(reply["times"]))
            self.rss.append(reply["rss"])
            if "floor" in reply:
                self.floors.append((reply["flops"], reply["floor"]))


def compare(threads, args, batches_path):
    # N processes of one thread each use N cores: compared only with PyTorch on as many threads
    counts = [n for n in args.processes if n == 1 or n <= threads]
    workers = [Worker("ours", threads, batches_path, n) for n in counts]
    workers.append(Worker("torch", threads, batches_path))
    for w in workers:
        w.run(args.warmup, record=False)
    for i in range(math.ceil(args.steps / args.chunk)):
        for w in workers if i % 2 == 0 else workers[::-1]:  # A B C | C B A | A B C ...
            w.run(args.chunk)
    peaks = [w.ask("quit")["peak_rss"] for w in workers]
    ours, torch = workers[0], workers[-1]
    flops = ours.floors[0][0]
    floor = statistics.median(f for _, f in ours.floors)
    print(f"\n{threads} thread(s): {len(ours.times)} steps each, chunks of {args.chunk}")
    print(f"  {'':<18}{'median ms':>10}{'p10':>7}{'p90':>7}{'peak RSS':>10}"
          f"{'RSS first -> last chunk':>25}{'x floor':>9}")
    for w, peak in zip(workers, peaks):
        ms = sorted(1000 * t for t in w.times)
        med = statistics.median(ms)
        print(f"  {w.label:<18}{med:>10.1f}{ms[len(ms) // 10]:>7.1f}{ms[-len(ms) // 10 - 1]:>7.1f}"
              f"{peak:>7.0f} MiB{w.rss[0]:>14.1f} -> {w.rss[-1]:.1f} MiB"
              f"{med / 1000 / floor:>8.2f}x")
    for w in workers[:-1]:
        paired = statistics.median(a / b for a, b in zip(w.chunks, torch.chunks))
        ratio = statistics.median(w.times) / statistics.median(torch.times)
        print(f"  ratio {w.label} / torch: {ratio:.2f}x (median of per-chunk ratios "
              f"{paired:.2f}x)")
    print(f"  GEMM floor: {flops / 1e9:.2f} GFLOP at {flops / floor / 1e9:.0f} GFLOP/s "
          f"(numpy sgemm on the step's shapes) = {1000 * floor:.1f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                    help="BLAS thread counts to measure, one run each (default: 1 2)")
    ap.add_argument("--steps", type=int, default=60, help="timed steps per framework")
    ap.add_argument("--chunk", type=int, default=10, help="steps per turn")
    ap.add_argument("--warmup", type=int, default=5,
                    help="untimed steps per framework first (caches, allocator)")
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2],
                    help="microtensor's training processes (data parallel), one worker each, "
                         "measured side by side where --threads gives PyTorch as many cores "
                         "(default: 1 2; PyTorch stays at --threads)")
    ap.add_argument("--busy", action="store_true", help="run one busy process beside")
    ap.add_argument("--worker", choices=("ours", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--batches", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return serve(args.worker, args.threads[0], args.batches, args.processes[0])
    from machine import describe  # benchmarks/machine.py
    print(describe())

    sys.path.insert(0, ROOT)
    from models.training.data import get_batch
    from models.training.settings import get_preset

    cfg = get_preset("baby")
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCAB, 100_000)
    xs, ys = zip(*(get_batch(ids, cfg.batch_size, cfg.block_size, rng) for _ in range(8)))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    print(f"baby step (batch {cfg.batch_size} x {cfg.block_size} tokens); load average "
          f"{os.getloadavg()[0]:.2f}{'; one busy process beside' if busy else ''}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "batches.npz")
            np.savez(path, x=np.stack(xs), y=np.stack(ys), cfg=json.dumps(cfg.to_dict()))
            for threads in args.threads:
                compare(threads, args, path)
    finally:
        if busy:
            busy.kill()
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
