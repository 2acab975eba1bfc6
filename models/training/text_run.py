"""train() in one call on a str, for a script or a test: the run, its settings and the encoded
text that `microtensor train` (cli/train.py) builds from its flags. The loop is train.py's.
"""
from .data import encode_text
from .run import TrainingRun
from .settings import TrainConfig
from .train import train


def train_on_text(config, text, out_dir, resume=False, overwrite=False, **options):
    """train() in one call: a TrainingRun on out_dir, the TrainConfig `config` resolved as if
    each setting were a flag, the str `text` encoded; `options` are train()'s. Returns what
    train() returns."""
    run = TrainingRun(out_dir, resume=resume, overwrite=overwrite)
    run.settings(TrainConfig, flags=config.to_dict())
    return train(run, encode_text(text), **options)
