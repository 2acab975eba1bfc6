"""How BPE training time grows with corpus size and vocabulary: ours (incremental pair counts),
the naive recount (every pair recounted before each merge) and Hugging Face `tokenizers`'
BpeTrainer; then ids against `tokenizers` on the whole corpus, and where the two trainers'
merges part (docs/bpe.md).

    python benchmarks/bpe_train_speed.py --data input.txt [--repeats 3]

Prints a Markdown table of medians (seconds). The naive recount runs once, and only where it
finishes in minutes (vocab 512, and 2048 on the smallest corpus). `tokenizers` uses every
core it may (RAYON_NUM_THREADS sets it; the line below names the count); ours uses one.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.machine import describe  # noqa: E402
from models.bpe import BPETokenizer, chunks, merge_step, train_merges  # noqa: E402
from models.interop.bpe_tokenizer_json import byte_to_char, hf_tokenizer  # noqa: E402

SIZES_MB = (0.1, 0.3, 1.1)
VOCABS = (512, 2048, 4096)


def naive_merges(text, vocab_size):
    """The textbook loop (distinct chunks with their counts, all pairs recounted per merge)."""
    from collections import Counter
    words = Counter(chunks(text))
    chunk_ids, weights, merges = [list(w) for w in words], list(words.values()), []
    while len(merges) < vocab_size - 256:
        pair, chunk_ids = merge_step(chunk_ids, 256 + len(merges), weights)
        if pair is None:
            break
        merges.append(pair)
    return merges


def hf_merges(text, vocab_size):
    """`tokenizers`' BpeTrainer on the same chunks, its merges as pairs of our ids."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator([text], trainer)
    return hf


def as_our_pairs(hf):
    """A trained `tokenizers` BPE's merges as pairs of our ids (bytes 0..255, merge k 256+k)."""
    import json
    model = json.loads(hf.to_str())["model"]
    char_to_byte = {c: b for b, c in byte_to_char().items()}
    ids = {bytes([b]): b for b in range(256)}
    pairs = []
    for merge in model["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        lb, rb = (bytes(char_to_byte[c] for c in s) for s in (left, right))
        pairs.append((ids[lb], ids[rb]))
        ids[lb + rb] = 256 + len(pairs) - 1
    return pairs


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a UTF-8 text file (tinyshakespeare)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with open(args.data, encoding="utf-8") as f:
        corpus = f.read()
    print(describe())
    print(f"tokenizers threads: {os.environ.get('RAYON_NUM_THREADS', os.cpu_count())}; "
          f"repeats {args.repeats} (median), naive once\n")
    print("| corpus | vocab | ours (incremental) s | naive recount s | tokenizers BpeTrainer s |")
    print("|---|---|---|---|---|")
    for mb in SIZES_MB:
        text = corpus[:int(mb * 1e6)]
        for vocab in VOCABS:
            ours = median_time(lambda: train_merges(text, vocab), args.repeats)  # noqa: B023
            hf = median_time(lambda: hf_merges(text, vocab), args.repeats)  # noqa: B023
            naive = "—"
            if vocab == 512 or (vocab == 2048 and mb == SIZES_MB[0]):
                naive = f"{median_time(lambda: naive_merges(text, vocab), 1):.2f}"  # noqa: B023
            print(f"| {len(text.encode()) / 1e6:.2f} MB | {vocab} | {ours:.2f} | {naive} | "
                  f"{hf:.2f} |", flush=True)

    # the whole corpus: ids against tokenizers, and where the trainers part
    ours = BPETokenizer.train(corpus, 4096)
    start = time.perf_counter()
    a = ours.encode(corpus)
    encode_s = time.perf_counter() - start
    b = hf_tokenizer(ours).encode(corpus).ids
    print(f"\nids on the whole corpus ({len(corpus.encode()):,} bytes): {len(a):,} ours, "
          f"{len(b):,} tokenizers, identical: {a == b} (our encode {encode_s:.2f} s)")
    theirs = as_our_pairs(hf_merges(corpus, 4096))
    first = next((k for k, (x, y) in enumerate(zip(ours.merges, theirs)) if x != y), None)
    print(f"trainers' merges: {len(ours.merges)} ours, {len(theirs)} tokenizers; identical "
          f"prefix {first if first is not None else min(len(ours.merges), len(theirs))}; "
          f"same set: {len(set(ours.merges) & set(theirs))} in common")
    if first is not None:
        vocab = ours.vocab
        for k in range(first, min(first + 3, len(theirs))):
            x, y = ours.merges[k], theirs[k]
            print(f"  merge {k}: ours {x} = {vocab[x[0]] + vocab[x[1]]!r}, tokenizers {y}")


if __name__ == "__main__":
    main()
