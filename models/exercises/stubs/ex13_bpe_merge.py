"""Exercise 13 · the tokenizer, before the notes' chapter 3 · one merge step of byte-pair encoding.

Byte-level BPE (Sennrich et al. 2016; GPT-2) starts from the 256 byte values and learns merges:
count every adjacent pair of ids, take the most frequent, give it a new id and replace it
everywhere, again and again. The text is first split into chunks (GPT-2's pattern splits words
from their spaces) and a pair never spans two chunks.

    count_pairs(chunks)              {(a, b): how many times b follows a, over every chunk}
    most_frequent_pair(counts)       the pair with the highest count; a tie goes to the
                                     SMALLEST pair (a, b), compared as a tuple of ids (the
                                     project's rule, the same in its BPE trainer)
    merge(chunks, pair, new_id)      every chunk with each occurrence of pair replaced by
                                     new_id, scanning left to right, occurrences not overlapping

Worked example (Wikipedia's "aaabdaaabac", a = 97, b = 98, c = 99, d = 100, new ids from 256):
(97, 97) "aa" is counted 4 times (a run "aaa" holds 2 overlapping pairs), the most frequent:
merge 1 gives Z = 256 and "ZabdZabac" (left to right, "aaa" becomes "Za"). Then (256, 97) "Za"
and (97, 98) "ab" both occur twice: the tie goes to the smaller pair, (97, 98) "ab", so
Y = 257 and "ZYdZYac"; then (256, 257) "ZY" is the most frequent, X = 258: "XdXac", as
Wikipedia shows.

Shapes: chunks a list of lists of ints (a chunk may be empty or hold one id) -> count_pairs:
a dict {(int, int): int}; most_frequent_pair: a tuple (int, int); merge: a new list of new
lists (the caller's chunks are left as they were).

Hint: count with zip(chunk, chunk[1:]) per chunk. For the tie rule, min over the pairs of
(−count, pair) does both at once; max(counts, key=counts.get) returns whichever tie the dict
saw first. To merge, walk an index i: where chunk[i], chunk[i + 1] is the pair, emit new_id
and step by 2, else emit chunk[i] and step by 1.

Reference (read it after): the project's byte-level BPE tokenizer, beside models/tokenizer.py
(its trainer updates the counts where a merge changes them instead of recounting, with the
same tie rule).
"""


def count_pairs(chunks):
    """{(a, b): count} over the adjacent pairs inside each chunk."""
    raise NotImplementedError("exercise 13: write count_pairs(chunks) in "
                              "exercises/ex13_bpe_merge.py")


def most_frequent_pair(counts):
    """The pair with the highest count; ties go to the smallest pair (a, b)."""
    raise NotImplementedError("exercise 13: write most_frequent_pair(counts) in "
                              "exercises/ex13_bpe_merge.py")


def merge(chunks, pair, new_id):
    """New chunks with each occurrence of pair replaced by new_id (left to right)."""
    raise NotImplementedError("exercise 13: write merge(chunks, pair, new_id) in "
                              "exercises/ex13_bpe_merge.py")
