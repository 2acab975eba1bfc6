"""Reading a pickle of plain data only (dicts, lists, strings, ints), such as nanoGPT's meta.pkl.

An ordinary `pickle.load` can call any function named in the file, so opening a stranger's
pickle can run their code. Every such call goes through `Unpickler.find_class`; this
unpickler's refuses all of them, so only the built-in containers and scalars that pickle
writes without naming a class can appear, and a check afterwards keeps only the four kinds
asked for. (Python documentation, `pickle`, "Restricting Globals".)
"""
import pickle

PLAIN_TYPES = (dict, list, str, int)


class PlainUnpickler(pickle.Unpickler):
    """An Unpickler that refuses to look up any class or function."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"it names {module}.{name}; only plain data (dicts, "
                                     "lists, strings, ints) is read")


def _check_plain(value, where):
    if type(value) not in PLAIN_TYPES:
        raise ValueError(f"{where} holds a {type(value).__name__}; only dicts, lists, strings "
                         "and ints are read")
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        if isinstance(value, dict):
            _check_plain(key, f"{where} (a key)")
        _check_plain(item, f"{where}[{key!r}]")


def load_plain(path):
    """The plain data in the pickle file `path`; ValueError naming the path for anything else."""
    try:
        with open(path, "rb") as f:
            value = PlainUnpickler(f).load()
    except (pickle.UnpicklingError, EOFError, ValueError) as error:
        raise ValueError(f"{path!r} cannot be read as plain data: {error}") from None
    _check_plain(value, repr(path))
    return value
