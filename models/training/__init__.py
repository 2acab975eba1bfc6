"""Training runs: settings and presets (settings.py), the run, its optimizer and loop (run.py),
its --out directory (out_dir.py) and checkpoints (checkpoint.py), the training text (data.py)
and its id files (id_file.py), data parallel (data_parallel.py), and the trainers of the GPT
(train.py; what it does around nanoGPT's loop, train_extras.py; in one call, text_run.py) and the
encoder-decoder (translate.py)."""
