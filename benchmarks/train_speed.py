"""Time one training step of nanoGPT's "baby" CPU config in microtensor and, beside it, PyTorch.

Run it from the repository root:

    python benchmarks/train_speed.py
    python benchmarks/train_speed.py --threads 1 --steps 30
    python benchmarks/train_speed.py --torch-python .venv-torch/bin/python

Each framework runs in its own worker subprocess (so thread settings and peak
RSS are per framework). The parent warms both up, then alternates chunks of
timed steps between them (A, B, B, A, A, B, ...) so that noise on a shared
machine hits both, and prints the medians and the ratio ours/torch. One step
is: forward with cross-entropy loss, zero_grad, backward, clip the global grad
norm to 1.0, AdamW step. If PyTorch cannot be imported only ours is timed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MARK = "@@BENCH "  # prefix of protocol lines on a worker's stdout

# nanoGPT's documented CPU config for shakespeare_char ("baby GPT" on a laptop).
CONFIGS = {
    "baby": dict(vocab_size=65, n_layer=4, n_head=4, n_embd=128, block_size=64,
                 batch_size=12, dropout=0.0, bias=False),
    # A very small config for a quick smoke test of the script itself.
    "tiny": dict(vocab_size=65, n_layer=2, n_head=2, n_embd=32, block_size=16,
                 batch_size=4, dropout=0.0, bias=False),
}
OPTIM = dict(lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
GRAD_CLIP = 1.0
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                   "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# --------------------------------------------------------------------------
# Worker side: shared helpers
# --------------------------------------------------------------------------

def _send(obj) -> None:
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()


def _maxrss_mib() -> float:
    import resource
    # Linux reports ru_maxrss in KiB, macOS in bytes.
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def _blas_threads():
    """Number of threads of the BLAS that numpy loaded, if it can be asked."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower() and ".so" in line}
    except OSError:
        return None
    for lib in sorted(libs):
        try:
            handle = ctypes.CDLL(lib)
        except OSError:
            continue
        for sym in ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
                    "openblas_get_num_threads64_", "MKL_Get_Max_Threads"):
            fn = getattr(handle, sym, None)
            if fn is not None:
                return int(fn())
    return None


def _make_batches(cfg, data_path, seed, n_batches=8):
    """A small pool of (x, y) int64 batches, the same for both frameworks."""
    import numpy as np
    rng = np.random.default_rng(seed)
    B, T = cfg["batch_size"], cfg["block_size"]
    if data_path:
        text = Path(data_path).read_text(encoding="utf-8")
        chars = sorted(set(text))
        stoi = {ch: i for i, ch in enumerate(chars)}
        data = np.array([stoi[ch] for ch in text], dtype=np.int64)
        vocab = len(chars)
        if len(data) < T + 2:
            raise SystemExit(f"--data file is too short for block_size {T}")
    else:
        vocab = cfg["vocab_size"]
        data = rng.integers(0, vocab, size=max(100_000, 4 * T), dtype=np.int64)
    batches = []
    for _ in range(n_batches):
        starts = rng.integers(0, len(data) - T - 1, size=B)
        x = np.stack([data[s:s + T] for s in starts]).astype(np.int64)
        y = np.stack([data[s + 1:s + T + 1] for s in starts]).astype(np.int64)
        batches.append((x, y))
    return vocab, batches


def _serve(step_fn, n_batches, info) -> None:
    """Answer the parent's commands: 'run K' times K steps, 'quit' ends."""
    _send(dict(ready=True, **info))
    i = 0
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "run":
            times, losses = [], []
            for _ in range(int(cmd[1])):
                t0 = time.perf_counter()
                loss = step_fn(i % n_batches)
                times.append(time.perf_counter() - t0)
                losses.append(loss)
                i += 1
            _send(dict(times=times, losses=losses))
        elif cmd[0] == "quit":
            _send(dict(maxrss_mib=_maxrss_mib()))
            return


# --------------------------------------------------------------------------
# Worker: microtensor (contract API only)
# --------------------------------------------------------------------------

def worker_ours(args) -> None:
    import numpy as np  # noqa: F401  (BLAS is loaded and its threads fixed here)

    import microtensor
    import models
    import nn
    rss_import = _maxrss_mib()
    microtensor.memory.keep_freed_memory()  # the allocator setting training uses (not import-time)

    cfg = dict(CONFIGS[args.config])
    vocab, batches = _make_batches(cfg, args.data, args.seed)
    microtensor.manual_seed(args.seed)
    config = models.GPTConfig(vocab_size=vocab, block_size=cfg["block_size"],
                              n_layer=cfg["n_layer"], n_head=cfg["n_head"],
                              n_embd=cfg["n_embd"], dropout=cfg["dropout"],
                              bias=cfg["bias"])
    model = models.GPT(config)
    model.train()

    all_params = list(model.parameters())
    params, seen = [], set()
    for p in all_params:  # a tied weight must be updated once
        if id(p) not in seen:
            seen.add(id(p))
            params.append(p)
    notes = []
    if len(params) != len(all_params):
        notes.append(f"model.parameters() yields {len(all_params) - len(params)} "
                     "duplicate(s) (tied weight?); deduplicated for the optimizer")
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    optimizer = nn.optim.AdamW(
        [{"params": decay, "weight_decay": OPTIM["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=OPTIM["lr"], betas=OPTIM["betas"], eps=OPTIM["eps"],
        weight_decay=OPTIM["weight_decay"])

    def step(b):
        x, y = batches[b]
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, GRAD_CLIP)
        optimizer.step()
        return float(loss.item())

    n_params = int(sum(int(np.prod(p.shape)) for p in params))
    info = dict(framework="microtensor", n_params=n_params, vocab=vocab,
                threads=_blas_threads(), rss_import_mib=rss_import,
                dtype=str(params[0].dtype), notes=notes)
    _serve(step, len(batches), info)


# --------------------------------------------------------------------------
# Worker: PyTorch reference model
# --------------------------------------------------------------------------

def _build_torch_gpt(torch, vocab, cfg, attn_impl):
    """A small pre-norm GPT in PyTorch with the same shapes as ours."""
    tnn = torch.nn
    F = torch.nn.functional
    C, H, T, L = cfg["n_embd"], cfg["n_head"], cfg["block_size"], cfg["n_layer"]
    bias = cfg["bias"]
    p_drop = cfg["dropout"]

    class SelfAttention(tnn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = tnn.Linear(C, 3 * C, bias=bias)
            self.out = tnn.Linear(C, C, bias=bias)
            self.out.is_residual_proj = True
            self.drop = tnn.Dropout(p_drop)
            self.register_buffer("blocked", torch.ones(T, T, dtype=torch.bool).triu(1),
                                 persistent=False)

        def forward(self, x):
            B, Tx, _ = x.shape
            q, k, v = self.qkv(x).split(C, dim=-1)
            # [B, T, C] -> [B, H, T, C/H]
            q, k, v = (t.view(B, Tx, H, C // H).transpose(1, 2) for t in (q, k, v))
            if attn_impl == "sdpa":
                y = F.scaled_dot_product_attention(
                    q, k, v, dropout_p=p_drop if self.training else 0.0, is_causal=True)
            else:  # the same primitive steps as ours: matmul, scale, mask, softmax, matmul
                scores = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
                scores = scores.masked_fill(self.blocked[:Tx, :Tx], float("-inf"))
                y = self.drop(scores.softmax(dim=-1)) @ v
            y = y.transpose(1, 2).reshape(B, Tx, C)
            return self.drop(self.out(y))

    class MLP(tnn.Module):
        def __init__(self):
            super().__init__()
            self.up = tnn.Linear(C, 4 * C, bias=bias)
            self.act = tnn.GELU()  # exact erf form
            self.down = tnn.Linear(4 * C, C, bias=bias)
            self.down.is_residual_proj = True
            self.drop = tnn.Dropout(p_drop)

        def forward(self, x):
            return self.drop(self.down(self.act(self.up(x))))

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = tnn.LayerNorm(C, bias=bias)
            self.attn = SelfAttention()
            self.norm2 = tnn.LayerNorm(C, bias=bias)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class TorchGPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = tnn.Embedding(vocab, C)
            self.pos_emb = tnn.Embedding(T, C)
            self.drop = tnn.Dropout(p_drop)
            self.blocks = tnn.ModuleList(Block() for _ in range(L))
            self.norm_f = tnn.LayerNorm(C, bias=bias)
            self.lm_head = tnn.Linear(C, vocab, bias=False)
            self.lm_head.weight = self.tok_emb.weight  # weight tying
            for m in self.modules():
                if isinstance(m, (tnn.Linear, tnn.Embedding)):
                    std = 0.02
                    if getattr(m, "is_residual_proj", False):
                        std = 0.02 / math.sqrt(2 * L)
                    tnn.init.normal_(m.weight, mean=0.0, std=std)
                    if getattr(m, "bias", None) is not None:
                        tnn.init.zeros_(m.bias)

        def forward(self, idx, targets=None):
            Tx = idx.shape[1]
            pos = torch.arange(Tx, device=idx.device)
            x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.norm_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return TorchGPT()


def worker_torch(args) -> None:
    import numpy as np  # noqa: F401
    import torch
    rss_import = _maxrss_mib()
    if args.threads:
        torch.set_num_threads(args.threads)

    cfg = dict(CONFIGS[args.config])
    vocab, np_batches = _make_batches(cfg, args.data, args.seed)
    batches = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in np_batches]
    torch.manual_seed(args.seed)
    model = _build_torch_gpt(torch, vocab, cfg, args.torch_attn)
    model.train()

    params = list(model.parameters())  # deduplicates the tied weight
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": OPTIM["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=OPTIM["lr"], betas=OPTIM["betas"], eps=OPTIM["eps"])

    def step(b):
        x, y = batches[b]
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, GRAD_CLIP)
        optimizer.step()
        return float(loss.item())

    info = dict(framework=f"torch {torch.__version__}", n_params=sum(p.numel() for p in params),
                vocab=vocab, threads=torch.get_num_threads(), rss_import_mib=rss_import,
                dtype=str(params[0].dtype).replace("torch.", ""),
                notes=[f"attention: {args.torch_attn}"])
    _serve(step, len(batches), info)


# --------------------------------------------------------------------------
# Parent: start workers, alternate, summarise
# --------------------------------------------------------------------------

class Worker:
    def __init__(self, name, python, args):
        self.name = name
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        if args.threads:
            for var in THREAD_ENV_VARS:
                env[var] = str(args.threads)
        cmd = [python, str(Path(__file__).resolve()), "--worker", name,
               "--config", args.config, "--seed", str(args.seed),
               "--torch-attn", args.torch_attn]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        if args.data:
            cmd += ["--data", str(Path(args.data).resolve())]
        self.proc = subprocess.Popen(cmd, cwd=str(REPO_ROOT), env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.times, self.losses, self.chunk_medians = [], [], []
        self.info = self._recv()

    def _recv(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
            sys.stderr.write(f"[{self.name}] {line}")  # stray prints from the model code
        rc = self.proc.wait()
        raise RuntimeError(f"{self.name} worker exited (rc {rc}) before answering")

    def run(self, k, record=True):
        self.proc.stdin.write(f"run {k}\n")
        self.proc.stdin.flush()
        out = self._recv()
        if record:
            self.times += out["times"]
            self.losses += out["losses"]
            self.chunk_medians.append(statistics.median(out["times"]))
        return out

    def quit(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        out = self._recv()
        self.proc.wait()
        return out["maxrss_mib"]


def _importable(python, module):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    r = subprocess.run([python, "-c", f"import {module}"], cwd=str(REPO_ROOT), env=env,
                       capture_output=True, text=True)
    return r.returncode == 0, (r.stderr.strip().splitlines() or [""])[-1]


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="baby")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per framework")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps per framework")
    ap.add_argument("--chunk", type=int, default=5,
                    help="steps each framework runs before the other takes a turn")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for both (BLAS/OpenMP env vars, torch.set_num_threads); "
                         "default: leave as is")
    ap.add_argument("--data", default=None,
                    help="text file to draw char-level batches from (default: random ids)")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--only", choices=("both", "ours", "torch"), default="both")
    ap.add_argument("--torch-python", default=sys.executable,
                    help="interpreter for the PyTorch worker (default: this one)")
    ap.add_argument("--ours-python", default=sys.executable,
                    help="interpreter for the microtensor worker (default: this one)")
    ap.add_argument("--torch-attn", choices=("sdpa", "manual"), default="sdpa",
                    help="PyTorch attention: fused scaled_dot_product_attention (as nanoGPT) "
                         "or the same primitive ops as ours")
    ap.add_argument("--pause", type=float, default=0.05,
                    help="seconds to sleep when switching framework (lets idle threads park)")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument("--worker", choices=("ours", "torch"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker == "ours":
        worker_ours(args)
        return 0
    if args.worker == "torch":
        worker_torch(args)
        return 0

    cfg = CONFIGS[args.config]
    wanted = ["ours", "torch"] if args.only == "both" else [args.only]
    names = {"ours": "microtensor", "torch": "torch"}
    pythons = {"ours": args.ours_python, "torch": args.torch_python}
    modules = {"ours": "models", "torch": "torch"}
    available = []
    for w in wanted:
        ok, err = _importable(pythons[w], modules[w])
        if ok:
            available.append(w)
        else:
            print(f"{names[w]}: cannot import {modules[w]!r} with {pythons[w]} ({err}); "
                  "not timed")
    if not available:
        print("nothing to time")
        return 1

    print(f"config {args.config}: " + ", ".join(f"{k}={v}" for k, v in cfg.items()))
    print(f"step = forward+loss, zero_grad, backward, clip {GRAD_CLIP}, AdamW"
          f"(lr={OPTIM['lr']}, betas={OPTIM['betas']}, wd={OPTIM['weight_decay']} on 2-D)")
    print(f"threads: {args.threads or 'as is'}; warmup {args.warmup}, timed {args.steps} "
          f"steps per framework, alternating in chunks of {args.chunk}; "
          f"data: {args.data or 'random ids'}")

    workers = {}
    try:
        for w in available:  # started one after the other so start-up does not overlap
            workers[w] = Worker(w, pythons[w], args)
        for w in available:
            if args.warmup:
                workers[w].run(args.warmup, record=False)
        order = list(available)
        remaining = args.steps
        while remaining > 0:
            k = min(args.chunk, remaining)
            for w in order:
                if len(order) > 1:
                    time.sleep(args.pause)
                workers[w].run(k)
            order.reverse()  # A B | B A | A B ...
            remaining -= k
        peaks = {w: workers[w].quit() for w in available}
    finally:
        for wk in workers.values():
            if wk.proc.poll() is None:
                wk.proc.kill()

    B, T = cfg["batch_size"], cfg["block_size"]
    results = {}
    print()
    print(f"{'framework':<14}{'params':>9}{'thr':>5}{'median ms':>11}{'p10':>8}{'p90':>8}"
          f"{'tok/s':>9}{'peak RSS':>10}{'import':>8}   loss first -> last")
    for w in available:
        wk = workers[w]
        ms = [t * 1000 for t in wk.times]
        med = statistics.median(ms)
        res = dict(framework=wk.info["framework"], n_params=wk.info["n_params"],
                   threads=wk.info["threads"], dtype=wk.info["dtype"],
                   median_ms=med, p10_ms=_pct(ms, 0.1), p90_ms=_pct(ms, 0.9),
                   tokens_per_s=B * T / (med / 1000), peak_rss_mib=peaks[w],
                   rss_after_import_mib=wk.info["rss_import_mib"],
                   loss_first=wk.losses[0], loss_last=wk.losses[-1],
                   step_ms=ms, notes=wk.info["notes"])
        results[w] = res
        print(f"{names[w]:<14}{res['n_params']:>9,}{str(res['threads']):>5}{med:>11.1f}"
              f"{res['p10_ms']:>8.1f}{res['p90_ms']:>8.1f}{res['tokens_per_s']:>9.0f}"
              f"{peaks[w]:>7.0f}MiB{res['rss_after_import_mib']:>5.0f}MiB"
              f"   {res['loss_first']:.3f} -> {res['loss_last']:.3f}")
    print("(peak RSS is the worker's ru_maxrss; 'import' is its RSS right after importing "
          "the framework; loss over the timed steps, continuing after warmup)")
    for w in available:
        for note in [f"dtype {results[w]['dtype']}"] + results[w]["notes"]:
            print(f"  {names[w]}: {note}")
    if "ours" in results and "torch" in results:
        ratio = results["ours"]["median_ms"] / results["torch"]["median_ms"]
        print(f"\nratio ours/torch (median ms/step): {ratio:.2f}x "
              f"({'slower' if ratio > 1 else 'faster'} than PyTorch)")
        if results["ours"]["n_params"] != results["torch"]["n_params"]:
            print(f"  note: parameter counts differ ({results['ours']['n_params']:,} vs "
                  f"{results['torch']['n_params']:,}); the models are not the same shape")
        results["ratio_ours_over_torch"] = ratio
        # Each chunk of ours ran right next to a chunk of torch; the median of
        # those per-chunk ratios is less sensitive to load that comes and goes.
        paired = statistics.median(a / b for a, b in zip(workers["ours"].chunk_medians,
                                                        workers["torch"].chunk_medians))
        print(f"paired ratio (median over {len(workers['ours'].chunk_medians)} adjacent "
              f"chunks): {paired:.2f}x")
        results["paired_ratio_ours_over_torch"] = paired
    if args.json:
        meta = dict(config=args.config, cfg=cfg, steps=args.steps, warmup=args.warmup,
                    chunk=args.chunk, threads=args.threads, data=args.data,
                    torch_attn=args.torch_attn)
        Path(args.json).write_text(json.dumps(dict(meta=meta, results=results), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
