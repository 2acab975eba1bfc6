"""Training runs: settings and presets (settings.py), the run and its loop (run.py), checkpoints
(checkpoint.py), data files (data.py), data parallel
(data_parallel.py), and the trainers of the GPT (train.py) and the encoder-decoder
(translate.py)."""
