"""Characters per second of KV-cache generation from the baby GPT, microtensor beside PyTorch eager.

    python benchmarks/generate_speed.py [--chars 500] [--rounds 7] [--threads 1]
    python benchmarks/generate_speed.py --out out/   # the weights of a trained checkpoint

Both generate from the same weights with `microtensor sample`'s settings (temperature 0.8,
top_k 200, one newline as prompt). The PyTorch side is a compact reference written here:
nanoGPT's model (whose inference scores the last position alone) plus a KV cache, dropping
the cache and recomputing the last block_size positions once the text outgrows the position
table, as `GPT.generate` does. Runs alternate
(ours, torch, torch, ours, ...) and the medians are reported; a greedy (top_k=1) run checks
that the two models agree token for token.
"""
import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def torch_reference(model):
    """A PyTorch GPT with a KV cache holding `model`'s weights; returns generate(idx, n, t, k)."""
    import torch
    from torch.nn import functional as F

    c = model.config
    C, H = c.n_embd, c.n_head
    w = {name: torch.from_numpy(p.data.copy()) for name, p in model.named_parameters()}
    blocks = []
    for i in range(c.n_layer):
        p = f"blocks.{i}."
        qkv = torch.cat([w[p + f"attn.{n}_proj.weight"] for n in "qkv"], dim=1)  # [C, 3C]
        blocks.append((w[p + "ln_1.weight"], qkv, w[p + "attn.out_proj.weight"],
                       w[p + "ln_2.weight"], w[p + "mlp.fc.weight"], w[p + "mlp.proj.weight"]))

    def forward(idx, caches, start):
        B, T = idx.shape
        x = w["wte.weight"][idx] + w["wpe.weight"][start:start + T]
        for (ln1, qkv, out, ln2, fc, proj), cache in zip(blocks, caches):
            h = F.layer_norm(x, (C,), ln1)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (h @ qkv).split(C, 2))
            if cache:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            cache[:] = [k, v]
            mask = torch.ones(T, k.shape[2], dtype=torch.bool).tril(k.shape[2] - T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + y.transpose(1, 2).reshape(B, T, C) @ out
            x = x + F.gelu(F.layer_norm(x, (C,), ln2) @ fc) @ proj
        # nanoGPT's inference: the head scores the last position alone (x[:, [-1], :])
        return F.layer_norm(x, (C,), w["ln_f.weight"])[:, [-1], :] @ w["wte.weight"].T

    @torch.no_grad()
    def generate(idx, max_new_tokens, temperature, top_k):
        idx = torch.from_numpy(idx)
        caches = None
        for _ in range(max_new_tokens):
            if idx.shape[1] > c.block_size:  # window slides: recompute without a cache
                caches, logits = None, forward(idx[:, -c.block_size:], [[]] * c.n_layer, 0)
            elif caches is None:
                caches = [[] for _ in range(c.n_layer)]
                logits = forward(idx, caches, 0)
            else:
                logits = forward(idx[:, -1:], caches, idx.shape[1] - 1)
            logits = logits[:, -1, :] / temperature
            if top_k == 1:
                next_id = logits.argmax(-1, keepdim=True)
            else:
                if top_k < logits.shape[-1]:
                    kth = torch.topk(logits, top_k).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, -math.inf)
                next_id = torch.multinomial(F.softmax(logits, -1), 1)
            idx = torch.cat([idx, next_id], 1)
        return idx.numpy()

    return generate


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7, help="timed runs per framework")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", help="checkpoint directory (default: an untrained baby GPT)")
    args = ap.parse_args()
    from machine import describe  # benchmarks/machine.py
    print(describe())

    import torch
    from threadpoolctl import threadpool_limits

    import microtensor
    from models import GPT, GPTConfig
    from models.training.checkpoint import load_checkpoint
    from models.training.settings import get_preset

    threadpool_limits(args.threads)
    torch.set_num_threads(args.threads)
    if args.out:
        model = load_checkpoint(args.out)[0]
    else:
        c = get_preset("baby")
        microtensor.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=65, block_size=c.block_size, n_layer=c.n_layer,
                              n_head=c.n_head, n_embd=c.n_embd, bias=c.bias))
    model.eval()
    torch_generate = torch_reference(model)
    prompt = np.zeros((1, 1), dtype=np.int64)  # one newline: id 0 in tinyshakespeare
    runs = {"microtensor": lambda k: model.generate(prompt, args.chars, 0.8, k),
            f"torch {torch.__version__}": lambda k: torch_generate(prompt, args.chars, 0.8, k)}
    greedy = [run(1)[0] for run in runs.values()]
    agree = int(np.cumprod(greedy[0] == greedy[1]).sum()) - 1
    times = {name: ([], []) for name in runs}  # wall seconds, CPU seconds of this process
    order = list(runs)
    print(f"{args.chars} characters, {args.threads} thread(s), load average "
          f"{os.getloadavg()[0]:.2f}; greedy texts agree on the first {agree} of {args.chars}")
    for _ in range(args.rounds):
        for name in order:
            t0, c0 = time.perf_counter(), time.process_time()
            runs[name](200)
            times[name][0].append(time.perf_counter() - t0)
            times[name][1].append(time.process_time() - c0)
        order.reverse()
    # CPU time as well: waiting for a core that another program holds does not count in it,
    # so on a shared machine it holds still where the wall time does not (at 1 thread)
    for name, (wall, cpu) in times.items():
        med = statistics.median(wall)
        print(f"  {name:<18} {args.chars / med:8.0f} chars/s  (median {1000 * med:.0f} ms per "
              f"{args.chars}, range {1000 * min(wall):.0f}-{1000 * max(wall):.0f}; "
              f"CPU {args.chars / statistics.median(cpu):.0f} chars/s)")
    (ours, ours_cpu), (theirs, theirs_cpu) = (
        (statistics.median(wall), statistics.median(cpu)) for wall, cpu in times.values())
    print(f"  microtensor / torch speed: {theirs / ours:.2f}x (CPU time: "
          f"{theirs_cpu / ours_cpu:.2f}x)")


if __name__ == "__main__":
    main()
