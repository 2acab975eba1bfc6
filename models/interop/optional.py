"""Importing an optional package (PyTorch, safetensors, tokenizers): a one-line error if missing."""
import importlib


def require(package, purpose, extra="interop"):
    """The imported module `package`, or RuntimeError saying what needs it and how to install it."""
    try:
        return importlib.import_module(package)
    except ImportError:
        pip_name = package.split(".")[0]
        raise RuntimeError(f"{purpose} needs the '{pip_name}' package, which is not installed "
                           f"(pip install {pip_name}, or pip install 'microtensor[{extra}]')"
                           ) from None
