"""models: the character-level GPT, its tokenizer, data, checkpoints and training loop, built on `nn` and `microtensor`."""
from .gpt import GPT, GPTConfig
from .seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from .tokenizer import CharTokenizer

__all__ = ["GPT", "GPTConfig", "CharTokenizer", "Seq2SeqConfig", "Seq2SeqTransformer"]
