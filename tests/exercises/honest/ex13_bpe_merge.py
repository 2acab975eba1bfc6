"""Honest ex 13: Counter, itertools.pairwise, heapq, bisect-free, own exception."""
import heapq
import itertools
from collections import Counter


class Done(Exception):
    pass


def count_pairs(chunks):
    return dict(Counter(itertools.chain.from_iterable(itertools.pairwise(c) for c in chunks)))


def most_frequent_pair(counts):
    return heapq.nsmallest(1, counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def merge(chunks, pair, new_id):
    out = []
    for chunk in chunks:
        it = iter(chunk)
        new = []
        prev = None
        try:
            prev = next(it)
        except StopIteration:
            out.append(new)
            continue
        while True:
            try:
                cur = next(it)
            except StopIteration:
                if prev is not None:
                    new.append(prev)
                break
            if prev is not None and (prev, cur) == tuple(pair):
                new.append(new_id)
                try:
                    prev = next(it)
                except StopIteration:
                    prev = None
                    break
            else:
                if prev is not None:
                    new.append(prev)
                prev = cur
        out.append(new)
    return out
