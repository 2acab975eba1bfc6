"""Measure the data path on large corpora: preparation speed, start time and memory per character.

It reports the first preparation (MB/s), the start once prepared (s), and the peak RSS
growth per character while preparing and while training.

Run it from the repository root:

    python benchmarks/data_speed.py                     # 50 MB and 500 MB
    python benchmarks/data_speed.py --sizes 50 --baseline --wide

The corpora are made in a temporary directory from the built-in corpus (CPython's help
topics, 103 distinct characters, some of them non-ASCII), repeated to each size; `--wide`
adds 300 CJK characters to it, so its ids need uint16. The text was just written and synced,
so preparing reads it from the page cache. Each measurement runs in a fresh subprocess;
the medians of --repeats runs are printed. Columns:
  prepare s, MB/s   first load_corpus (no id file yet), wall; cpu: MB per CPU second, what
                    a quiet machine reaches (the load average is printed: 2 cores here)
  RSS B/char        peak RSS (VmHWM, or ru_maxrss without /proc) while preparing, above the
                    RSS after the imports, per character
  start s           load_corpus once prepared; process s: from launching Python to the ids
                    ready (interpreter, imports, load_corpus)
  batch us          one get_batch of 12 x 64 (as `train --preset baby`), mean of 2000
  train B/char      peak RSS growth after 2000 such batches from the train split and 2000
                    from the validation split
  sha256 s, B/char  then `train`'s corpus fingerprint (models.training.data.corpus_sha256, which
                    reads every id once at its start): its time, and the peak RSS growth
`--baseline` also times the text path load_corpus replaced (read the str, CharTokenizer's
encode into int64) at the first size.
"""
import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MARK = "@@DATA "                      # prefix of the worker's one result line on stdout
WIDE_CHARS = "".join(chr(0x4E00 + i) for i in range(300))


def rss_bytes(field):
    """VmRSS (now) or VmHWM (peak) of this process in bytes; ru_maxrss without /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024   # macOS counts bytes, Linux KiB


def worker(task, path, launched):
    """Run one measurement in this process, started at time.time() = `launched` by the
    parent; print MARK + JSON of its numbers."""
    sys.path.insert(0, str(REPO_ROOT))
    import numpy as np

    from models.tokenizer import CharTokenizer
    from models.training.data import corpus_sha256, get_batch, load_corpus, split_ids
    base = rss_bytes("VmRSS")
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = {}
    if task == "baseline":
        with open(path, encoding="utf-8") as f:
            text = f.read()
        tokenizer = CharTokenizer.from_text(text)
        ids = np.array(tokenizer.encode(text), dtype=np.int64)
        result["seconds"] = time.perf_counter() - t0
    else:
        tokenizer, ids = load_corpus(path)
        result["seconds"] = time.perf_counter() - t0
        result["cpu_seconds"] = time.process_time() - cpu0
        result["since_launch"] = time.time() - float(launched)   # Python, imports, load
        if task == "train":
            train, val = split_ids(ids, 64)
            generator = np.random.default_rng(0)
            t1 = time.perf_counter()
            for _ in range(2000):
                get_batch(train, 12, 64, generator)
            result["batch_us"] = (time.perf_counter() - t1) / 2000 * 1e6
            for _ in range(2000):
                get_batch(val, 12, 64, generator)
            result["train_peak"] = rss_bytes("VmHWM") - base
            t1 = time.perf_counter()
            corpus_sha256(tokenizer, ids)
            result["sha256_seconds"] = time.perf_counter() - t1
    result.update(peak=rss_bytes("VmHWM") - base, chars=len(ids), dtype=str(ids.dtype),
                  vocab=tokenizer.vocab_size)
    print(MARK + json.dumps(result), flush=True)


def run_worker(task, path):
    """The result dict of one worker subprocess."""
    done = subprocess.run([sys.executable, __file__, "--worker", task, str(path),
                           repr(time.time())],
                          check=False, capture_output=True, text=True, cwd=REPO_ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"worker {task} failed:\n{done.stdout}{done.stderr}")
    return json.loads(lines[-1][len(MARK):])


def make_corpus(path, megabytes, wide):
    """Write the built-in corpus repeated to `megabytes` MB (whole copies) at `path`."""
    sys.path.insert(0, str(REPO_ROOT))
    from models.training.data import default_corpus
    seed = ((WIDE_CHARS + "\n" if wide else "") + default_corpus()).encode("utf-8")
    copies = max(1, round(megabytes * 1e6 / len(seed)))
    with open(path, "wb") as f:
        f.writelines(itertools.repeat(seed, copies))
        os.fsync(f.fileno())          # a corpus long on disk: no writeback during the timing


def measure(path, repeats):
    """The numbers of one corpus: medians over `repeats` runs of each measurement."""
    cache = Path(str(path) + ".microtensor-ids")
    prepares, starts = [], []
    for _ in range(repeats):
        cache.unlink(missing_ok=True)
        prepares.append(run_worker("prepare", path))
        starts.append(run_worker("train", path))
    size = os.path.getsize(path)
    chars = prepares[0]["chars"]
    seconds = statistics.median(r["seconds"] for r in prepares)
    return {
        "MB": size / 1e6, "chars": chars, "dtype": prepares[0]["dtype"],
        "vocab": prepares[0]["vocab"],
        "prepare_s": seconds, "prepare_MB_per_s": size / 1e6 / seconds,
        "prepare_cpu_MB_per_s": size / 1e6 / statistics.median(r["cpu_seconds"] for r in prepares),
        "prepare_rss_per_char": statistics.median(r["peak"] for r in prepares) / chars,
        "start_s": statistics.median(r["seconds"] for r in starts),
        "start_process_s": statistics.median(r["since_launch"] for r in starts),
        "batch_us": statistics.median(r["batch_us"] for r in starts),
        "train_rss_per_char": statistics.median(r["train_peak"] for r in starts) / chars,
        "sha256_s": statistics.median(r["sha256_seconds"] for r in starts),
        "sha256_rss_per_char": statistics.median(r["peak"] for r in starts) / chars,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[50, 500], metavar="MB")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--wide", action="store_true", help="also a corpus of > 256 characters")
    parser.add_argument("--baseline", action="store_true",
                        help="also time the replaced str + int64 path at the first size")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)  # TASK PATH LAUNCHED
    args = parser.parse_args()
    from machine import describe  # benchmarks/machine.py
    print(describe())
    if args.worker:
        return worker(*args.worker)
    print("load average before: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    print(f"{'corpus':>14} {'chars':>12} {'ids':>6} {'prepare s':>9} {'MB/s':>6} {'cpu':>5} "
          f"{'RSS B/char':>10} {'start s':>7} {'process s':>9} {'batch us':>8} "
          f"{'train B/char':>12} {'sha256 s':>8} {'B/char':>6}")
    kinds = [False, True] if args.wide else [False]
    with tempfile.TemporaryDirectory(prefix="data_speed-") as directory:
        for megabytes in args.sizes:
            for wide in kinds:
                name = f"{megabytes:g}MB{' wide' if wide else ''}"
                path = Path(directory) / f"corpus-{megabytes:g}{'-wide' if wide else ''}.txt"
                make_corpus(path, megabytes, wide)
                r = measure(path, args.repeats)
                print(f"{name:>14} {r['chars']:>12,} {r['dtype']:>6} {r['prepare_s']:>9.2f} "
                      f"{r['prepare_MB_per_s']:>6.0f} {r['prepare_cpu_MB_per_s']:>5.0f} "
                      f"{r['prepare_rss_per_char']:>10.2f} "
                      f"{r['start_s']:>7.3f} {r['start_process_s']:>9.2f} "
                      f"{r['batch_us']:>8.1f} {r['train_rss_per_char']:>12.2f} "
                      f"{r['sha256_s']:>8.2f} {r['sha256_rss_per_char']:>6.2f}",
                      flush=True)
                if args.baseline and megabytes == args.sizes[0] and not wide:
                    b = run_worker("baseline", path)
                    print(f"{'  str + int64':>14} {b['chars']:>12,} {'int64':>6} "
                          f"{b['seconds']:>9.2f} {r['MB'] / b['seconds']:>6.0f} {'':>5} "
                          f"{b['peak'] / b['chars']:>10.2f}   (the path load_corpus replaced)",
                          flush=True)
                path.unlink()
                Path(str(path) + ".microtensor-ids").unlink()
    print("load average after: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
