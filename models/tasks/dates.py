"""A built-in translation task for the encoder-decoder: dates written in words, in seven
phrasings, to ISO form ("the third of march, 1999" -> "1999-03-03").

Nothing is downloaded: the pairs come from a seed, so a run is reproducible and a student checks
any translation by eye. Sources run from 10 to 37 characters, so batches are padded and the
padding masks matter; no held-out date occurs in training, in any phrasing. References: the
date-translation exercise of deeplearning.ai's Sequence Models course; Bahdanau et al. 2015
(attention for translation); Vaswani et al. 2017 §5 (training).
"""
import calendar
import datetime

import numpy as np

from ..tokenizer import CharTokenizer

MONTHS = [calendar.month_name[m].lower() for m in range(1, 13)]      # "january" ...
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth",
            "sixteenth", "seventeenth", "eighteenth", "nineteenth", "twentieth"]
ORDINALS += [f"twenty-{w}" for w in ORDINALS[:9]] + ["thirtieth", "thirty-first"]
YEARS = (1900, 2099)                                                  # inclusive
N_DAYS = (datetime.date(YEARS[1], 12, 31) - datetime.date(YEARS[0], 1, 1)).days + 1  # 73,049
MAX_LEN = 40  # positions of a source (at most 37 characters) or a target (11 tokens)


def _suffix(day):
    """"st", "nd", "rd" or "th": 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd, 23rd..."""
    return "th" if day in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


# Each phrasing writes (day, month name, year); the month name comes lower-case or capitalised.
PHRASINGS = [
    lambda d, m, y: f"the {ORDINALS[d - 1]} of {m}, {y}",     # the third of march, 1999
    lambda d, m, y: f"{m} {d}{_suffix(d)} {y}",               # March 3rd 1999
    lambda d, m, y: f"{d} {m[:3]} {y}",                       # 3 Mar 1999
    lambda d, m, y: f"{m} {d}, {y}",                          # march 3, 1999
    lambda d, m, y: f"{d}{_suffix(d)} of {m}, {y}",           # 3rd of March, 1999
    lambda d, m, y: f"{m[:3]} {d} {y}",                       # Mar 3 1999
    lambda d, m, y: f"{ORDINALS[d - 1]} {m} {y}",             # third march 1999
]


class Seq2SeqTokenizer:
    """Characters to ids after the special ids of models.Seq2SeqConfig (pad_id 0, bos_id 1,
    eos_id 2): character i of `chars` is id 3 + i (a models.CharTokenizer, `.chars`, maps it)."""

    pad_id, bos_id, eos_id = 0, 1, 2
    SPECIALS = 3

    def __init__(self, chars):
        self.chars = CharTokenizer(chars)
        self.vocab_size = self.SPECIALS + self.chars.vocab_size

    def encode(self, text, bos=False, eos=False):
        """str -> list[int], with bos_id in front and eos_id at the end if asked; ValueError
        names the first character outside the vocabulary."""
        ids = [i + self.SPECIALS for i in self.chars.encode(text)]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids):
        """ids -> str, up to the first eos_id, leaving out pad_id and bos_id."""
        ids = _through_eos(ids, self.eos_id)
        return self.chars.decode([i - self.SPECIALS for i in ids if i >= self.SPECIALS])


def source_tokenizer():
    """The source alphabet: every character any phrasing can write."""
    letters = "".join(sorted(set("".join(MONTHS + ORDINALS + ["the of st nd rd th"]))))
    return Seq2SeqTokenizer(sorted(set(" ,-0123456789" + letters + letters.upper())))


def target_tokenizer():
    """The target alphabet: digits and the hyphen of YYYY-MM-DD."""
    return Seq2SeqTokenizer("-0123456789")


def phrase(date, phrasing, capitalise):
    """The words for a datetime.date in phrasing number `phrasing` (0 .. 6)."""
    month = MONTHS[date.month - 1]
    return PHRASINGS[phrasing](date.day, month.capitalize() if capitalise else month, date.year)


def date_pairs(n_train=20000, n_test=500, seed=0):
    """(train, test): lists of (source words, ISO date) pairs.

    Dates are uniform over YEARS, each in a random phrasing with the month capitalised or
    not. The test dates are distinct; training draws, with repetition, from all the others.
    """
    rng = np.random.default_rng(seed)
    first = datetime.date(YEARS[0], 1, 1).toordinal()
    order = rng.permutation(N_DAYS)
    test_days, train_days = order[:n_test], order[n_test:]

    def pairs(days):
        dates = [datetime.date.fromordinal(first + int(day)) for day in days]
        return [(phrase(d, int(rng.integers(len(PHRASINGS))), bool(rng.integers(2))),
                 d.isoformat()) for d in dates]

    return pairs(rng.choice(train_days, size=n_train)), pairs(test_days)


def encode_batch(pairs, src_tokenizer, tgt_tokenizer):
    """(src, tgt_in, targets), int64 arrays right-padded with pad_id, for a list of pairs.

    src [B, T_src] (the characters, no bos/eos), tgt_in [B, T_tgt] = bos + target,
    targets [B, T_tgt] = target + eos: tgt_in shifted left by one (teacher forcing).
    """
    tgts = [tgt_tokenizer.encode(t, bos=True, eos=True) for _, t in pairs]
    return (_pad([src_tokenizer.encode(s) for s, _ in pairs]), _pad([t[:-1] for t in tgts]),
            _pad([t[1:] for t in tgts]))


def _pad(rows, pad_id=Seq2SeqTokenizer.pad_id):
    out = np.full((len(rows), max(map(len, rows))), pad_id, dtype=np.int64)  # [B, T_max]
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def _greedy(model, texts, src_tokenizer, batch_size):
    """The generated id rows of a Seq2SeqTransformer for a list of source strings, in batches."""
    for i in range(0, len(texts), batch_size):
        src = _pad([src_tokenizer.encode(t) for t in texts[i:i + batch_size]])
        yield from model.generate(src, model.config.max_len)


def translate(model, texts, src_tokenizer, tgt_tokenizer, batch_size=256):
    """Greedy translations (list of str) of a list of source strings by a Seq2SeqTransformer."""
    return [tgt_tokenizer.decode(row) for row in _greedy(model, texts, src_tokenizer, batch_size)]


def exact_match(model, pairs, src_tokenizer, tgt_tokenizer, batch_size=256):
    """The fraction of pairs whose greedy translation is the reference exactly: the same tokens
    up to and including eos_id. Compared as ids, not decoded text: decode drops pad and bos
    wherever they are and needs no eos, so "202<pad>4-01-05" with no eos would read as right."""
    rows = _greedy(model, [s for s, _ in pairs], src_tokenizer, batch_size)
    return float(np.mean([_through_eos(row, tgt_tokenizer.eos_id)
                          == tgt_tokenizer.encode(target, eos=True)
                          for row, (_, target) in zip(rows, pairs)]))


def _through_eos(ids, eos_id):
    """The ids (any shape, flattened) up to and including the first eos_id (all, if none)."""
    ids = np.asarray(ids).reshape(-1).tolist()
    return ids[:ids.index(eos_id) + 1] if eos_id in ids else ids
