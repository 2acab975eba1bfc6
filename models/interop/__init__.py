"""Interoperability: our GPT to and from Hugging Face GPT-2 directories and nanoGPT checkpoints.

hf.py (config.json + model.safetensors + a character tokenizer.json), nanogpt.py (ckpt.pt +
meta.pkl), names.py (the name table and the array moves), char_tokenizer_json.py,
plain_pickle.py (reading meta.pkl without running code), optional.py (the optional packages).
Nothing here is imported by the rest of `models`; the command line imports it on demand.
"""
from .hf import export_hf, import_hf
from .nanogpt import export_nanogpt, import_nanogpt

__all__ = ["export_hf", "export_nanogpt", "import_hf", "import_nanogpt"]
