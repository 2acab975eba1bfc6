"""Memory and time of one training step against block size, ordinary vs tiled attention (notes 3.8).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/attention_memory.py
    ... --sizes 64 256 1024 --repeats 3 --steps 2 --tiles 32 64 128 256 --tile-size-at 1024

The model is the baby GPT (`--preset baby`: 4 layers, 4 heads, width 128, no biases, batch
12) at each block size T; one step is forward with cross-entropy, backward, AdamW, as
`microtensor train` runs it. Each (T, attention) point runs in a fresh subprocess, so that its
peak RSS (ru_maxrss: the process's most resident memory) is its own; the points are
interleaved (every size and both attentions, then again) so that load from other processes
hits both, and the table quotes medians over the repeats. Saved bytes: what attention's own
graph nodes keep for backward in one forward, as `microtensor.profile()` counts them (the
nodes with an attention role: QKᵀ, S, A, Z, or the one tiled node). Time: wall and CPU
(one BLAS thread, so CPU time is the work, less the waits for a core). `--tiles` also times
the tiled step at --tile-size-at for each tile size, in the first round. Writes
docs/results/attention_memory.json, .md and .png (matplotlib).
"""
import argparse
import importlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(ROOT, "docs", "results")
VOCAB, BATCH = 65, 12  # tinyshakespeare's characters; the baby preset's batch


def worker(attention, block_size, steps, tile_size):
    """Run in the subprocess: one untimed step under profile(), then `steps` timed steps."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    import microtensor
    import nn
    from models import GPT, GPTConfig

    threadpool_limits(1)  # as `train --threads 1`, the default
    microtensor.memory.keep_freed_memory()  # as the train command does
    # the module, not nn.tiled_attention: that name is the function the package exports
    importlib.import_module("nn.tiled_attention").TILE_SIZE = tile_size
    microtensor.manual_seed(0)
    model = GPT(GPTConfig(VOCAB, block_size, n_layer=4, n_head=4, n_embd=128, bias=False,
                          attention=attention))
    optimizer = nn.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    rng = np.random.default_rng(0)

    def batch():
        x = rng.integers(0, VOCAB, size=(BATCH, block_size))
        return x, np.roll(x, -1, axis=1)

    def step(x, y):
        optimizer.zero_grad()
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()

    with microtensor.profile() as prof:  # the first step, untimed, is the one counted
        _, loss = model(*batch())
    attention_bytes = prof.saved_bytes(where=lambda r: r.role not in (None, "residual"))
    all_bytes = prof.saved_bytes()
    loss.backward()
    del prof, loss
    times, cpu_times = [], []
    for _ in range(steps):
        x, y = batch()
        t0, c0 = time.perf_counter(), time.process_time()
        step(x, y)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)  # one BLAS thread: the work, less the waits
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {"attention": attention, "block_size": block_size, "tile_size": tile_size,
            "step_s": statistics.median(times), "cpu_s": statistics.median(cpu_times),
            "peak_rss": peak,
            "attention_saved": attention_bytes, "all_saved": all_bytes}


def point(attention, block_size, steps, tile_size):
    """One measurement in a fresh Python process; None if it ran out of memory or failed."""
    code = (f"import json, sys; sys.path.insert(0, {ROOT!r}); sys.path.insert(0, {HERE!r}); "
            f"import attention_memory as b; "
            f"print(json.dumps(b.worker({attention!r}, {block_size}, {steps}, {tile_size})))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if run.returncode != 0:
        print(f"  {attention} T={block_size}: failed ({run.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(run.stdout.strip().splitlines()[-1])


def machine():
    """The processor, Python, numpy and the BLAS kernel numpy runs (threadpoolctl)."""
    import numpy as np
    from threadpoolctl import threadpool_info

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    blas = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')} kernel, "
            f"{i.get('num_threads')} threads)" for i in threadpool_info()
            if i.get("user_api") == "blas"]
    return {"processor": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "blas": "; ".join(blas) or "unknown",
            "load_average": os.getloadavg()}


def median_rows(points):
    """{(T, attention): medians of step_s and peak_rss, and the saved bytes} over repeats."""
    rows = {}
    for p in points:
        rows.setdefault((p["block_size"], p["attention"]), []).append(p)
    def cpu(ps):  # older result files lack it
        return statistics.median(p["cpu_s"] for p in ps) if all("cpu_s" in p for p in ps) else None

    return {key: {"step_s": statistics.median(p["step_s"] for p in ps), "cpu_s": cpu(ps),
                  "peak_rss": statistics.median(p["peak_rss"] for p in ps),
                  "attention_saved": ps[0]["attention_saved"], "all_saved": ps[0]["all_saved"],
                  "runs": len(ps)}
            for key, ps in sorted(rows.items())}


def table(rows, sizes):
    """A markdown table: per T, ordinary → tiled and the ratio of each measure."""
    def cell(o, t, key, scale, fmt, ratio_of_tiled):
        if o is None or o.get(key) is None or t.get(key) is None:
            value = "—" if t.get(key) is None else format(t[key] / scale, fmt)
            return f"— → {value} | | "
        ratio = t[key] / o[key] if ratio_of_tiled else o[key] / t[key]
        return f"{format(o[key] / scale, fmt)} → {format(t[key] / scale, fmt)} | {ratio:.2f}× | "

    lines = ["| T | attention's saved bytes (MB) | fewer | peak RSS (MB) | lower | step, wall (s) "
             "| tiled/ordinary | step, CPU (s) | tiled/ordinary |",
             "|---|---|---|---|---|---|---|---|---|"]
    for t in sizes:
        o, ti = rows.get((t, "ordinary")), rows.get((t, "tiled"))
        if ti is None:
            continue
        lines.append(f"| {t} | " + cell(o, ti, "attention_saved", 1e6, ".1f", False)
                     + cell(o, ti, "peak_rss", 1e6, ".0f", False)
                     + cell(o, ti, "step_s", 1, ".2f", True)
                     + cell(o, ti, "cpu_s", 1, ".2f", True).rstrip())
    return "\n".join(lines)


def figure(rows, sizes, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for attention, style in (("ordinary", "o-"), ("tiled", "s-")):
        ts = [t for t in sizes if (t, attention) in rows]
        r = [rows[(t, attention)] for t in ts]
        axes[0].plot(ts, [x["attention_saved"] / 1e6 for x in r], style, label=attention)
        axes[1].plot(ts, [x["peak_rss"] / 1e6 for x in r], style, label=attention)
        axes[2].plot(ts, [x["step_s"] for x in r], style, label=f"{attention}, wall")
        if all(x["cpu_s"] is not None for x in r):
            axes[2].plot(ts, [x["cpu_s"] for x in r], style[0] + "--", label=f"{attention}, CPU",
                         color=axes[2].lines[-1].get_color())
    titles = ("attention's bytes kept for backward (MB)", "peak RSS of a step (MB)",
              "time of a step (s, median; CPU: the work)")
    for ax, title in zip(axes, titles):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("block size T")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("baby GPT (4 layers, 4 heads, width 128, batch 12): ordinary vs tiled attention")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048])
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (default: 3)")
    parser.add_argument("--steps", type=int, default=1,
                        help="timed steps per point, after one untimed (default: 1)")
    parser.add_argument("--tile-size", type=int, default=64, help="tiles of the main table")
    parser.add_argument("--tiles", type=int, nargs="*", default=[32, 64, 128, 256],
                        help="tile sizes also timed at the largest size (none: skip)")
    parser.add_argument("--tile-size-at", type=int, default=1024,
                        help="the block size of the tile-size sweep (default: %(default)s)")
    parser.add_argument("--out", default=RESULTS, help="folder of the .json, .md and .png")
    parser.add_argument("--replot", metavar="JSON",
                        help="measure nothing: write the table and figure of a saved result")
    args = parser.parse_args(argv)
    if args.replot:
        with open(args.replot) as f:
            saved = json.load(f)
        return write(args.out, saved["machine"], saved["args"], saved["points"],
                     saved["tile_points"])
    info = machine()
    print(f"processor: {info['processor']} ({info['cores']} cores); numpy {info['numpy']}; "
          f"BLAS: {info['blas']}; load average {info['load_average']}")
    points, tile_points = [], []
    for round_ in range(args.repeats):
        for t in args.sizes:
            for attention in (("ordinary", "tiled") if round_ % 2 == 0 else ("tiled", "ordinary")):
                p = point(attention, t, args.steps, args.tile_size)
                if p is not None:
                    points.append(p)
                    print(f"  round {round_ + 1}: T={t} {attention}: step {p['step_s']:.2f} s "
                          f"({p['cpu_s']:.2f} s CPU), "
                          f"peak RSS {p['peak_rss'] / 1e6:.0f} MB, attention saved "
                          f"{p['attention_saved'] / 1e6:.1f} MB", flush=True)
        for tile in args.tiles if round_ == 0 else ():  # the sweep once: it is a side note
            p = point("tiled", args.tile_size_at, args.steps, tile)
            if p is not None:
                tile_points.append(p)
                print(f"  round {round_ + 1}: T={args.tile_size_at} tiled, tiles of {tile}: "
                      f"step {p['step_s']:.2f} s ({p['cpu_s']:.2f} s CPU)", flush=True)
        write(args.out, info, vars(args), points, tile_points)  # after each round: a long
        # run stopped early keeps the rounds it finished


def write(out, info, args, points, tile_points):
    """Print the table; write it (.md), the points (.json) and the figure (.png) under `out`."""
    sizes = sorted({p["block_size"] for p in points})
    rows = median_rows(points)
    tile_sizes = sorted({p["tile_size"] for p in tile_points})
    by_tile = {tile: [p for p in tile_points if p["tile_size"] == tile] for tile in tile_sizes}
    tiles = {tile: statistics.median(p["step_s"] for p in ps) for tile, ps in by_tile.items()}
    text = table(rows, sizes)
    if tiles:
        at = tile_points[0]["block_size"]
        text += (f"\n\nTiled step at T = {at} by tile size (median wall s): "
                 + ", ".join(f"{tile}: {s:.2f}" for tile, s in tiles.items()))
        if all("cpu_s" in p for p in tile_points):
            text += "; CPU s: " + ", ".join(
                f"{tile}: {statistics.median(p['cpu_s'] for p in ps):.2f}"
                for tile, ps in by_tile.items())
    print(text)
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "attention_memory")
    with open(base + ".json", "w") as f:
        args = {**args, "out": os.path.relpath(out, ROOT)}  # no path of this machine in the file
        json.dump({"machine": info, "args": args, "points": points,
                   "tile_points": tile_points}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(f"Machine: {info['processor']}, {info['cores']} cores, numpy {info['numpy']}, "
                f"BLAS {info['blas']}; load average at start {info['load_average']}.\n\n"
                + text + "\n")
    figure(rows, sizes, base + ".png")
    print(f"wrote {base}.json, .md and .png")


if __name__ == "__main__":
    main()
