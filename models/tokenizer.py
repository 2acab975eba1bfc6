"""A character-level tokenizer: each distinct character of the text is one token.

References: Karpathy, nanoGPT `data/shakespeare_char/prepare.py` (the same vocabulary: the
sorted set of the text's characters).
"""
import numpy as np

from microtensor import Tensor


class CharTokenizer:
    """Maps characters to integer ids 0 .. vocab_size-1 (in the order of `chars`) and back;
    from_text sorts, so two tokenizers built from texts with the same characters agree."""

    def __init__(self, chars):
        """chars: the vocabulary, a string or a sequence of one-character strings, no repeats.

        Raises ValueError for an empty vocabulary, a repeated character or a multi-character entry.
        """
        chars = list(chars)
        if not chars:
            raise ValueError("CharTokenizer: the vocabulary is empty (no characters given)")
        for ch in chars:
            if not isinstance(ch, str) or len(ch) != 1:
                raise ValueError(f"CharTokenizer: vocabulary entries must be single characters; "
                                 f"got {ch!r}")
        if len(set(chars)) != len(chars):
            raise ValueError("CharTokenizer: the vocabulary repeats a character")
        self.chars, self.vocab_size = chars, len(chars)  # ids lie in [0, vocab_size)
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.unit = "characters"  # what its ids count, in messages ("tokens" for a BPE)

    @classmethod
    def from_text(cls, text):
        """The tokenizer whose vocabulary is every distinct character of `text`, sorted."""
        return cls(sorted(set(text)))

    def encode(self, text):
        """str -> list[int] of length len(text); ValueError names the first character that is
        not in the vocabulary."""
        try:
            return [self.stoi[ch] for ch in text]
        except KeyError as error:
            ch = error.args[0]
            raise ValueError(f"character {ch!r} (U+{ord(ch):04X}) at position {text.index(ch)} "
                             f"is not in the tokenizer's vocabulary of {self.vocab_size} "
                             "characters") from None

    def decode(self, ids):
        """ids (list, numpy array or Tensor of ints, any shape flattened) -> str.

        Raises TypeError for an id that is not an int, ValueError for one outside
        [0, vocab_size).
        """
        ids = ids.data if isinstance(ids, Tensor) else ids
        ids = ids.reshape(-1).tolist() if isinstance(ids, np.ndarray) else ids
        for i in ids:
            if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
                raise TypeError(f"token id {i!r} is not an int")
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"token id {i} is outside the vocabulary [0, {self.vocab_size})")
        return "".join(self.chars[i] for i in ids)

    # --- the interface every tokenizer shares (models/bpe.py's BPETokenizer too) -------------

    def to_info(self):
        """What a checkpoint's config.json keeps of it (info.vocab: the characters)."""
        return {"vocab": self.chars}

    def fingerprint(self):
        """The text hashed into the corpus fingerprint a resume compares."""
        return "".join(self.chars)

    def default_prompt(self):
        """A newline if the vocabulary has one, else its first character."""
        return "\n" if "\n" in self.stoi else self.chars[0]

    def __repr__(self):
        return f"CharTokenizer(vocab_size={self.vocab_size})"
