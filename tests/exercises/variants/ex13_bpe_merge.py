"""Exercise 13, another right answer: a sort for the tie rule; merge by looking back at the
last id emitted."""


def count_pairs(chunks):
    counts = {}
    for chunk in chunks:
        for i in range(len(chunk) - 1):
            counts[chunk[i], chunk[i + 1]] = counts.get((chunk[i], chunk[i + 1]), 0) + 1
    return counts


def most_frequent_pair(counts):
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]


def merge(chunks, pair, new_id):
    merged = []
    for chunk in chunks:
        out = []
        for token in chunk:
            if out and out[-1] == pair[0] and token == pair[1]:
                out[-1] = new_id           # new_id is never pair[0], so no overlap
            else:
                out.append(token)
        merged.append(out)
    return merged
