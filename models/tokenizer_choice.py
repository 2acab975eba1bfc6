"""Which tokenizer a GPT run uses: building it for `train --tokenizer`, reading it back from a
checkpoint's config.json (info.vocab: characters; info.bpe: byte-level BPE merges).

The BPE is learned on the training split alone (the first 90% of the characters, as
data.split_ids cuts the character ids), so the validation text stays unseen.
"""
import os

import numpy as np

from .bpe import BPETokenizer
from .schema import FileError, check

TOKENIZERS = ("char", "bpe")


def add_tokenizer_flags(parser):
    """train's --tokenizer and --vocab-size."""
    parser.add_argument("--tokenizer", choices=TOKENIZERS, default=None,
                        help="char: one token per character (the default); bpe: byte-level "
                             "BPE learned on the training split (with --resume: the saved one)")
    parser.add_argument("--vocab-size", metavar="N", type=int, default=None,
                        help="--tokenizer bpe: tokens in all, 256 bytes and N - 256 merges "
                             "(default: 1024)")


def choose_tokenizer(corpus, name, vocab_size, run):
    """(tokenizer, ids) for training: `corpus` as load_corpus made it (characters), or the BPE
    learned on its training split, or on resume the checkpoint's own tokenizer. Raises
    ValueError for --vocab-size without bpe, or a resume asking for another tokenizer."""
    saved = run.manifest["info"].get("bpe") if run.resuming else None
    if vocab_size is not None and name != "bpe":
        raise ValueError(f"--vocab-size {vocab_size} needs --tokenizer bpe")
    if run.resuming:
        was = "bpe" if saved is not None else "char"
        if name is not None and name != was:
            raise ValueError(f"--tokenizer {name}: the checkpoint in {run.out_dir} was trained "
                             f"with the {was} tokenizer; a resumed run keeps it")
        if saved is None:
            return corpus
        from .bpe_file import SPEC, check_merges
        merges = check_merges(check(saved, SPEC, run.config_path, "info.bpe")["merges"],
                              f"{run.config_path}: info.bpe")
        if vocab_size is not None and vocab_size != 256 + len(merges):
            raise ValueError(f"--vocab-size {vocab_size}: the checkpoint's tokenizer has "
                             f"{256 + len(merges)} tokens; a resumed run keeps it")
        return encode_corpus(corpus, BPETokenizer(merges))
    if name != "bpe":
        return corpus
    vocab_size = 1024 if vocab_size is None else vocab_size
    if not 256 <= vocab_size <= 1 << 16:
        raise ValueError(f"--vocab-size is {vocab_size}; expected 256 (the bytes alone) to "
                         f"{1 << 16}")
    return bpe_corpus(corpus, vocab_size)


def encode_corpus(corpus, tokenizer):
    """(tokenizer, ids) of the text that `corpus` (CharTokenizer, ids) holds."""
    chars, ids = corpus
    out = tokenizer.encode(chars.decode(np.asarray(ids)))
    return tokenizer, np.array(out, dtype=np.uint16 if tokenizer.vocab_size <= 1 << 16
                               else np.uint32)


def bpe_corpus(corpus, vocab_size, val_fraction=0.1):
    """(BPETokenizer, ids [N] uint16/uint32) for the (CharTokenizer, ids) of data.load_corpus:
    the BPE is trained on the first 1 - val_fraction of the characters only."""
    chars, ids = corpus
    text = chars.decode(np.asarray(ids))
    tokenizer = BPETokenizer.train(text[:int(len(text) * (1 - val_fraction))], vocab_size)
    return encode_corpus(corpus, tokenizer)


def load_tokenizer(out_dir, model, manifest, load_char):
    """The tokenizer of a GPT checkpoint: BPE if info.bpe is there (checked as bpe.json is,
    FileError naming config.json), else load_char() (the character vocabulary's checks)."""
    from .bpe_file import SPEC, check_merges
    info = manifest["info"]
    if "bpe" not in info:
        return load_char()
    path = os.path.join(os.fspath(out_dir), "config.json")
    tokenizer = BPETokenizer(check_merges(check(info["bpe"], SPEC, path, "info.bpe")["merges"],
                                          f"{path}: info.bpe"))
    if tokenizer.vocab_size != model.config.vocab_size:
        raise FileError(f"{path}: info.bpe has {tokenizer.vocab_size} tokens but "
                        f"model_config.vocab_size is {model.config.vocab_size}")
    return tokenizer
