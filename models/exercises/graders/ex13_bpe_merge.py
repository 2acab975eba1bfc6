"""Grader of exercise 13, one merge step of byte-pair encoding (issue 27; Sennrich et al. 2016):
Wikipedia's worked example "aaabdaaabac" step by step (counts by hand, the tie "Za" against
"ab" going to the smaller pair, "XdXac" at the end), counts that never span two chunks, the
tie rule against dicts filled in every order, merges left to right without overlap and
without writing the caller's chunks, then twelve merges of a text chained through the
student's three functions."""
import itertools

from .. import reference
from ..grading import ExerciseFailure, Mistake, call, call_watching, inputs_rng, student_function

HINT = ("count zip(chunk, chunk[1:]) inside each chunk; the top pair is the one with the "
        "highest count, ties to the smallest (a, b); merge left to right: at a match emit "
        "new_id and skip 2, else emit the id and skip 1")


def _across_chunks(chunks):  # the chunks joined first: pairs span a word and the next
    return reference.count_pairs([list(itertools.chain(*chunks))])


def _no_overlap_count(chunks):  # "aaa" counted once: counting as merge would replace
    counts = {}
    for chunk in chunks:
        i = 0
        while i + 1 < len(chunk):
            pair = (chunk[i], chunk[i + 1])
            counts[pair] = counts.get(pair, 0) + 1
            i += 2 if chunk[i] == chunk[i + 1] else 1
    return counts


def _first_seen(counts):  # max(counts, key=counts.get): the tie the dict saw first
    return max(counts, key=counts.get)


def _largest(counts):  # max over (count, pair): ties to the largest pair
    return max(counts, key=lambda pair: (counts[pair], pair))


def _overlapping(chunks, pair, new_id):  # "aaa" -> Z Z: each position matched on its own
    out = []
    for chunk in chunks:
        new = [new_id if (a, b) == tuple(pair) else a for a, b in zip(chunk, chunk[1:])]
        out.append(new + chunk[-1:] if chunk and (len(chunk) < 2 or
                                                  (chunk[-2], chunk[-1]) != tuple(pair))
                   else new)
    return out


def _right_to_left(chunks, pair, new_id):  # "aaa" -> a Z
    flipped = reference.merge([c[::-1] for c in chunks], tuple(pair)[::-1], new_id)
    return [c[::-1] for c in flipped]


def _first_only(chunks, pair, new_id):  # str.replace(..., 1) thinking: one occurrence a chunk
    out = []
    for chunk in chunks:
        for i in range(len(chunk) - 1):
            if (chunk[i], chunk[i + 1]) == tuple(pair):
                chunk = chunk[:i] + [new_id] + chunk[i + 2:]
                break
        out.append(list(chunk))
    return out


def _in_place(chunks, pair, new_id):  # right ids, but the caller's lists rewritten
    merged = reference.merge(chunks, pair, new_id)
    for chunk, new in zip(chunks, merged):
        chunk[:] = new
    return chunks


COUNT_MISTAKES = [
    Mistake("across chunks", "count inside each chunk only: a pair never spans two chunks (a "
            "word and the next), so do not join the chunks first", _across_chunks),
    Mistake("overlaps skipped", "count every adjacent position: a run \"aaa\" holds the pair "
            "(a, a) twice, at 0 and at 1 (the merge later replaces one, but the count is 2)",
            _no_overlap_count),
]
TOP_MISTAKES = [
    Mistake("first seen", "a tie goes to the smallest pair (a, b), not to whichever the dict "
            "saw first: max(counts, key=counts.get) depends on the order of the text; use "
            "min(counts, key=lambda p: (-counts[p], p))", _first_seen),
    Mistake("largest on ties", "a tie goes to the *smallest* pair (a, b): max over (count, "
            "pair) picks the largest", _largest),
]
MERGE_MISTAKES = [
    Mistake("overlapping", "occurrences do not overlap: after a match skip both ids, so "
            "\"aaa\" with (a, a) becomes \"Za\", not \"ZZ\"", _overlapping),
    Mistake("right to left", "scan left to right: \"aaa\" with (a, a) becomes \"Za\", not "
            "\"aZ\"", _right_to_left),
    Mistake("first only", "replace *every* occurrence in each chunk, not only the first",
            _first_only),
    Mistake("in place", "return new lists and leave the caller's chunks as they were: the "
            "trainer still holds them", _in_place),
]
MISTAKES_BY_FUNCTION = {"count_pairs": COUNT_MISTAKES, "most_frequent_pair": TOP_MISTAKES,
                        "merge": MERGE_MISTAKES}


def _ids(text):
    return list(text.encode("utf-8"))


def _show(chunks):
    return "[" + ", ".join(str(c) for c in chunks) + "]"


def _diagnose(got, args, mistakes, normalize):
    for mistake in mistakes:
        try:
            wrong = mistake.fn(*[[list(c) for c in a] if isinstance(a, list) and a and
                                 isinstance(a[0], list) else a for a in args])
        except Exception:
            continue
        if normalize(wrong) == got:
            return mistake.hint
    return HINT


def _counts(value):
    if not isinstance(value, dict):
        raise ExerciseFailure(f"count_pairs returned a {type(value).__name__}, expected a dict "
                              "{(a, b): count}")
    try:
        return {(int(k[0]), int(k[1])): int(v) for k, v in value.items()}
    except (TypeError, ValueError, IndexError):
        raise ExerciseFailure("count_pairs must return a dict of (int, int) pairs to int "
                              "counts") from None


def _pair(value):
    try:
        a, b = value
        return int(a), int(b)
    except (TypeError, ValueError):
        raise ExerciseFailure(f"most_frequent_pair returned {value!r}, expected a pair "
                              "(a, b)") from None


def _chunks(value):
    try:
        return [[int(i) for i in chunk] for chunk in value]
    except TypeError:
        raise ExerciseFailure(f"merge returned {type(value).__name__} values, expected a list "
                              "of lists of ids") from None


def _expect_counts(fn, chunks, context):
    got = _counts(call(fn, [list(c) for c in chunks], what="count_pairs(...)", context=context,
                       hint=HINT))
    expected = reference.count_pairs(chunks)
    if got != expected:
        wrong = sorted(set(got) | set(expected), key=lambda p: (got.get(p) == expected.get(p), p))
        pair = wrong[0]
        raise ExerciseFailure(
            f"count_pairs(...)[{pair}] = {got.get(pair, 0)}, expected {expected.get(pair, 0)} "
            f"({context}). Hint: {_diagnose(got, [chunks], COUNT_MISTAKES, _counts)}")


def _expect_top(fn, counts, context):
    got = _pair(call(fn, dict(counts), what="most_frequent_pair(...)", context=context,
                     hint=HINT))
    expected = reference.most_frequent_pair(counts)
    if got != expected:  # which mistake: ask again with the dict in the reverse order
        flipped = dict(reversed(list(counts.items())))
        again = _pair(call(fn, dict(flipped), what="most_frequent_pair(...)", context=context,
                           hint=HINT))
        hint = HINT
        for mistake in TOP_MISTAKES:
            if (_pair(mistake.fn(counts)), _pair(mistake.fn(flipped))) == (got, again):
                hint = mistake.hint
                break
        raise ExerciseFailure(f"most_frequent_pair(...) = {got}, expected {expected} "
                              f"({context}). Hint: {hint}")


def _expect_merge(fn, chunks, pair, new_id, context):
    got, wrote = call_watching(fn, [list(c) for c in chunks], pair, new_id, what="merge(...)",
                               context=context, hint=HINT)
    got = _chunks(got)
    expected = reference.merge(chunks, pair, new_id)
    if got != expected:
        hint = _diagnose(got, [chunks, pair, new_id], MERGE_MISTAKES, _chunks)
        raise ExerciseFailure(f"merge(...) = {_show(got)}, expected {_show(expected)} "
                              f"({context}). Hint: {hint}")
    if 0 in wrote:
        raise ExerciseFailure(f"merge wrote into the caller's chunks (they changed during the "
                              f"call), expected them unchanged, {_show(chunks)} ({context}). "
                              f"Hint: {MERGE_MISTAKES[-1].hint}")


def check_worked_example(student):
    """"aaabdaaabac": (97, 97) counted 4 times wins, merge to Z = 256: "ZabdZabac"; then the
    tie "Za" (256, 97) against "ab" (97, 98), both 2, goes to the smaller, (97, 98): Y = 257,
    "ZYdZYac"; then (256, 257) "ZY": X = 258, "XdXac"."""
    count = student_function(student, "count_pairs")
    top = student_function(student, "most_frequent_pair")
    merge = student_function(student, "merge")
    chunks = [_ids("aaabdaaabac")]
    for new_id, pair, text in ((256, (97, 97), "aaabdaaabac"), (257, (97, 98), "ZabdZabac"),
                               (258, (256, 257), "ZYdZYac")):
        context = f"Wikipedia's example, merge {new_id - 255}: {text}"
        _expect_counts(count, chunks, context)
        counts = reference.count_pairs(chunks)
        _expect_top(top, counts, context)
        _expect_merge(merge, chunks, pair, new_id, context)
        chunks = reference.merge(chunks, pair, new_id)
    assert chunks == [[258, 100, 258, 97, 99]]  # "XdXac": the grader's own arithmetic


def check_counts_inside_chunks(student):
    """Chunks as a pre-tokenizer gives them ("the", " cat", " sat"): no pair spans two;
    "aaa" counts (a, a) twice; empty chunks and one-id chunks count nothing."""
    count = student_function(student, "count_pairs")
    chunks = [_ids(w) for w in ("the", " cat", " sat", " on", " the", " mat")]
    _expect_counts(count, chunks, "the chunks of \"the cat sat on the mat\"")
    _expect_counts(count, [_ids("aaa"), [], [7], _ids("aaaa")], "\"aaa\", [], [7], \"aaaa\"")
    _expect_counts(count, [], "no chunks")
    chunks = _random_chunks(inputs_rng(130))
    _expect_counts(count, chunks, f"random chunks {_show(chunks)}")


def _random_chunks(rng, n=8, alphabet=6):
    """Chunks of small random ids, drawn per run (a table of recorded answers fails them)."""
    base = int(rng.integers(0, 250))
    return [[base + int(i) for i in rng.integers(0, alphabet, size=int(rng.integers(0, 7)))]
            for _ in range(n)]


def check_ties_go_to_the_smallest_pair(student):
    """The same counts given in every insertion order: the pair with the highest count, ties
    to the smallest (a, b); a single pair; the largest count unique but inserted last."""
    top = student_function(student, "most_frequent_pair")
    tied = [((256, 97), 2), ((97, 98), 2), ((100, 256), 1), ((98, 100), 2)]
    for order in itertools.permutations(tied):
        _expect_top(top, dict(order), f"counts {dict(order)}")
    _expect_top(top, {(5, 6): 1}, "one pair")
    _expect_top(top, {(1, 2): 3, (0, 9): 3, (4, 4): 5}, "counts {(1, 2): 3, (0, 9): 3, (4, 4): 5}")
    rng = inputs_rng(131)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, 300, size=(8, 2))}
    drawn = {pair: int(c) for pair, c in zip(sorted(pairs, key=lambda _: rng.random()),
                                             rng.integers(1, 4, size=len(pairs)))}
    _expect_top(top, drawn, f"counts {drawn}")


def check_merge_left_to_right(student):
    """(a, a) in "aaa" -> "Za", in "aaaa" -> "ZZ"; the pair at a chunk's end; chunks without
    it unchanged; empty and one-id chunks; the caller's chunks left as they were."""
    merge = student_function(student, "merge")
    a = 97
    _expect_merge(merge, [_ids("aaa"), _ids("aaaa"), _ids("baa"), _ids("bcd"), [], [a]],
                  (a, a), 300, "\"aaa\", \"aaaa\", \"baa\", \"bcd\", [], [97] with (97, 97)")
    _expect_merge(merge, [_ids("abab"), _ids("ba")], (a, 98), 301, "\"abab\", \"ba\" with (97, 98)")
    rng = inputs_rng(132)
    chunks = _random_chunks(rng, alphabet=3)
    flat = [i for c in chunks for i in c] or [0]
    pair = (int(rng.choice(flat)), int(rng.choice(flat)))
    _expect_merge(merge, chunks, pair, 400, f"random chunks {_show(chunks)} with {pair}")


TEXT = ("the cat sat on the mat; the rat sat on the cat. that is that, and then the cat ran "
        "at the rat and the rat ran at the cat")


def check_twelve_merges_of_a_text(student):
    """Twelve merge steps on a short text (its words shuffled and letters renamed per run) split
    into words with their leading space, each step
    through your three functions (count, top pair, merge), ids from 256: the same pairs and
    chunks as the reference trainer's step."""
    count = student_function(student, "count_pairs")
    top = student_function(student, "most_frequent_pair")
    merge = student_function(student, "merge")
    rng = inputs_rng(133)  # the text's words in an order, and its letters renamed, per run
    letters = sorted(set(TEXT) - {" "})
    renamed = dict(zip(letters, rng.permutation(letters)))
    words = ["".join(renamed[c] for c in w) for w in rng.permutation(TEXT.split(" "))]
    chunks = [_ids(words[0])] + [_ids(" " + w) for w in words[1:]]
    for step in range(12):
        context = f"merge {step + 1} of a text of {len(chunks)} chunks"
        got_counts = _counts(call(count, [list(c) for c in chunks], what="count_pairs(...)",
                                  context=context, hint=HINT))
        pair = _pair(call(top, got_counts, what="most_frequent_pair(...)", context=context,
                          hint=HINT))
        expected = reference.most_frequent_pair(reference.count_pairs(chunks))
        if pair != expected:
            raise ExerciseFailure(f"merge {step + 1} chose {pair}, expected {expected} "
                                  f"({context}). Hint: {HINT}")
        _expect_merge(merge, chunks, pair, 256 + step, context)
        chunks = reference.merge(chunks, pair, 256 + step)


CHECKS = [check_worked_example, check_counts_inside_chunks, check_ties_go_to_the_smallest_pair,
          check_merge_left_to_right, check_twelve_merges_of_a_text]
