"""models: the character-level GPT and its tokenizer, built on `nn` and `microtensor`.

The package also holds the data, checkpoints and training loop (models.training.data,
models.training.checkpoint, models.training.train) and the command line (models.cli).
"""
from .gpt import GPT, GPTConfig
from .seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from .tokenizer import CharTokenizer

__all__ = ["GPT", "GPTConfig", "CharTokenizer", "Seq2SeqConfig", "Seq2SeqTransformer"]
