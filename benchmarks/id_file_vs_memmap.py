"""Why the training data is read by an IdFile, not np.memmap: batch time and memory, side by side.

Three ways to draw 2000 batches of 12 x 64 (`train --preset baby`) from one prepared id file:
IdFile.windows (a seek and a read per window, what training uses), np.memmap opened per batch
(nanoGPT's get_batch), and one long-lived np.memmap. Each runs in a fresh process and prints
its median batch time and its RSS growth per character afterwards (a long-lived map keeps
every page it touched). Run from the repository root:

    python benchmarks/id_file_vs_memmap.py --megabytes 50
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ("IdFile", "memmap per batch", "memmap long-lived")


def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))


def measure(mode, path):
    sys.path.insert(0, os.getcwd())
    import numpy as np

    from models.training.data import get_batch, load_corpus
    _, ids = load_corpus(path)
    mapped = lambda: np.memmap(ids._file.name, ids.dtype, "r", ids._offset, (len(ids),))  # noqa
    source = mapped() if mode == "memmap long-lived" else ids
    generator, base, times = np.random.default_rng(0), rss(), []
    for _ in range(2000):
        start = time.perf_counter()
        get_batch(mapped() if mode == "memmap per batch" else source, 12, 64, generator)
        times.append(time.perf_counter() - start)
    print(f"{mode:>18}: {statistics.median(times) * 1e6:6.1f} us a batch, RSS growth "
          f"{(rss() - base) / len(ids):.3f} bytes a character ({len(ids):,} ids)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=50)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        return measure(args.mode, args.path)
    sys.path.insert(0, os.getcwd())
    from models.training.data import default_corpus, load_corpus
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                   platform.machine())
    print(f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()} (no BLAS involved)")
    with tempfile.TemporaryDirectory() as directory:
        path, seed = os.path.join(directory, "corpus.txt"), default_corpus()
        with open(path, "w", encoding="utf-8") as f:
            f.write(seed * int(args.megabytes * 1e6 // len(seed.encode("utf-8")) + 1))
        load_corpus(path)  # prepared once, before the measurements
        for mode in MODES:
            subprocess.run([sys.executable, __file__, "--mode", mode, "--path", path], check=True)


if __name__ == "__main__":
    main()
