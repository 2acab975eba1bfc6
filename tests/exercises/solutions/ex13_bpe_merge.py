"""Exercise 13, written as a student would: collections.Counter, a sort key for the tie rule."""
from collections import Counter


def count_pairs(chunks):
    counts = Counter()
    for chunk in chunks:
        counts.update(zip(chunk, chunk[1:]))
    return dict(counts)


def most_frequent_pair(counts):
    best = max(counts.values())
    return min(pair for pair, n in counts.items() if n == best)


def merge(chunks, pair, new_id):
    out = []
    for chunk in chunks:
        new, i = [], 0
        while i < len(chunk):
            if chunk[i:i + 2] == list(pair):
                new.append(new_id)
                i += 2
            else:
                new.append(chunk[i])
                i += 1
        out.append(new)
    return out
