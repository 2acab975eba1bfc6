"""The models' initialisations (GPT-2's for gpt.py, Glorot's for seq2seq.py) and the in-place
fills they use, named as torch.nn.init's: draws come from microtensor's generator (manual_seed
repeats them), and each fill counts as one in-place write in the parameter's version, as
torch's fill under no_grad does. References: Radford et al. 2019 §2.3; Glorot & Bengio 2010.
"""
import math

import microtensor
import nn
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


def init_gpt2_weights(model, n_layer, std=0.02):
    """GPT-2's initialisation, in place (its released code; nanoGPT): Linear and Embedding
    weights ~ N(0, std²), Linear biases 0. The two projections per block that add into the
    residual stream (attn.out_proj, mlp.proj) get std / √(2·n_layer), so that the stream's
    variance does not grow with depth (GPT-2 §2.3)."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            normal_(module.weight, 0.0, std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            zeros_(module.bias)
    for name, param in model.named_parameters():  # drawn again after the rest, as nanoGPT does
        if name.endswith(("attn.out_proj.weight", "mlp.proj.weight")):
            normal_(param, 0.0, std / math.sqrt(2 * n_layer))


def init_xavier_uniform(model):
    """Every matrix ~ U(±√(6 / (fan_in + fan_out))), in place (Glorot & Bengio 2010), as the
    Annotated Transformer and torch.nn.Transformer start theirs."""
    for p in model.parameters():
        if p.ndim > 1:
            bound = math.sqrt(6.0 / sum(p.shape))  # fan_in + fan_out = sum(p.shape)
            uniform_(p, -bound, bound)
