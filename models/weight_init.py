"""In-place fills of a parameter for the models' initialisations (gpt.py, seq2seq.py), named as
torch.nn.init's: draws come from microtensor's generator (manual_seed repeats them), and each
fill counts as one in-place write in the parameter's version, as torch's fill under no_grad does.
"""
import microtensor
from microtensor import writing


def normal_(tensor, mean=0.0, std=1.0):
    """Fill `tensor` with draws from N(mean, std²), in place; returns it."""
    with writing(tensor) as data:  # the tensor's array; the write is counted in its version
        data[...] = microtensor.random.generator().normal(mean, std, size=tensor.shape)
    return tensor


def uniform_(tensor, a=0.0, b=1.0):
    """Fill `tensor` with draws from U(a, b), in place; returns it."""
    with writing(tensor) as data:
        data[...] = microtensor.random.generator().uniform(a, b, size=tensor.shape)
    return tensor


def zeros_(tensor):
    """Fill `tensor` with 0, in place; returns it."""
    with writing(tensor) as data:
        data[...] = 0.0
    return tensor
