"""models: the character-level GPT, the 2017 encoder-decoder and their tokenizer, built on `nn`.

The machinery lives in subpackages named for what it is: training, cli, interop, tasks, exercises.
"""
from .gpt import GPT, GPTConfig
from .seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from .tokenizer import CharTokenizer

__all__ = ["GPT", "GPTConfig", "CharTokenizer", "Seq2SeqConfig", "Seq2SeqTransformer"]
