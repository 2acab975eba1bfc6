"""Optimizers (SGD, AdamW) and the warmup + cosine learning-rate schedule."""
from .adamw import AdamW
from .optimizer import Optimizer
from .schedule import warmup_cosine_lr
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "AdamW", "warmup_cosine_lr"]
