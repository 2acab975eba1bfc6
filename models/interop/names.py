"""The name table between our `state_dict()` and GPT-2's (Hugging Face, nanoGPT), with the moves.

Both GPT-2 implementations name one block `h.{i}` with `ln_1, attn.c_attn, attn.c_proj, ln_2,
mlp.c_fc, mlp.c_proj`, under a `transformer.` prefix; `c_attn` is Q, K and V fused into one
layer of width 3D, in that order. Layouts: our `Linear.weight` is [in, out] (`y = x W`, the
notes' `Q = X W_Q`), GPT-2's `Conv1D` (Hugging Face) stores the same [in, out], and
nanoGPT's `torch.nn.Linear` stores the transpose [out, in]. The functions here speak the
Conv1D layout; nanogpt.py transposes the four matrices named in `LINEAR_WEIGHTS`.

References: Radford et al. 2019 (GPT-2); Karpathy, nanoGPT `model.py` (its
`from_pretrained` makes the same Conv1D -> Linear transpose).
"""
import numpy as np

from ..gpt import GPT
from ..schema import FileError

# Per block i (ours -> GPT-2, without the `transformer.` prefix); q/k/v fuse into c_attn.
BLOCK_NAMES = {
    "ln_1.weight": "ln_1.weight", "ln_1.bias": "ln_1.bias",
    "attn.out_proj.weight": "attn.c_proj.weight", "attn.out_proj.bias": "attn.c_proj.bias",
    "ln_2.weight": "ln_2.weight", "ln_2.bias": "ln_2.bias",
    "mlp.fc.weight": "mlp.c_fc.weight", "mlp.fc.bias": "mlp.c_fc.bias",
    "mlp.proj.weight": "mlp.c_proj.weight", "mlp.proj.bias": "mlp.c_proj.bias",
}
TOP_NAMES = {"wte.weight": "wte.weight", "wpe.weight": "wpe.weight",
             "ln_f.weight": "ln_f.weight", "ln_f.bias": "ln_f.bias"}
QKV = ("q_proj", "k_proj", "v_proj")
# The matrices that are nn.Linear in nanoGPT (stored [out, in]) and Conv1D in Hugging Face.
LINEAR_WEIGHTS = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",
                  "mlp.c_proj.weight")
# nanoGPT's named_parameters() order inside one block (the tied lm_head is listed as wte).
GPT2_BLOCK_ORDER = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                    "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")


def gpt2_parameter_names(n_layer, bias=True):
    """GPT-2 names (no prefix) in nanoGPT's `named_parameters()` order; bias=False drops biases."""
    names = ["wte.weight", "wpe.weight"]
    names += [f"h.{i}.{n}" for i in range(n_layer) for n in GPT2_BLOCK_ORDER]
    names += ["ln_f.weight", "ln_f.bias"]
    return [n for n in names if bias or not n.endswith(".bias")]


def gpt2_shapes(config):
    """{GPT-2 name (no prefix): shape} of every parameter of a GPT-2 for our GPTConfig,
    biases included, Conv1D layout [in, out]: what a file must hold before a model is built."""
    v, t, d = config.vocab_size, config.block_size, config.n_embd
    block = {"ln_1.weight": (d,), "ln_1.bias": (d,), "attn.c_attn.weight": (d, 3 * d),
             "attn.c_attn.bias": (3 * d,), "attn.c_proj.weight": (d, d),
             "attn.c_proj.bias": (d,), "ln_2.weight": (d,), "ln_2.bias": (d,),
             "mlp.c_fc.weight": (d, 4 * d), "mlp.c_fc.bias": (4 * d,),
             "mlp.c_proj.weight": (4 * d, d), "mlp.c_proj.bias": (d,)}
    shapes = {"wte.weight": (v, d), "wpe.weight": (t, d)}
    shapes.update({f"h.{i}.{n}": block[n] for i in range(config.n_layer) for n in block})
    shapes.update({"ln_f.weight": (d,), "ln_f.bias": (d,)})
    return shapes


def to_gpt2(state, n_layer, zero_biases=False):
    """Our state dict (names -> arrays) -> GPT-2 names -> arrays, Conv1D layout [in, out].

    Q, K, V weights [D, D] each concatenate into c_attn.weight [D, 3D] (their biases into
    [3D]). Names absent from `state` stay absent (a bias-free model has no biases), unless
    zero_biases: then each missing bias becomes zeros, which is what a bias-free layer is.
    Works for any per-parameter arrays of the parameters' shapes (e.g. AdamW moments).
    """
    out = {}
    for ours, theirs in TOP_NAMES.items():
        if ours in state:
            out[theirs] = state[ours]
    for i in range(n_layer):
        ours, theirs = f"blocks.{i}.", f"h.{i}."
        for name, gpt2_name in BLOCK_NAMES.items():
            if ours + name in state:
                out[theirs + gpt2_name] = state[ours + name]
        for kind in ("weight", "bias"):
            parts = [state.get(f"{ours}attn.{p}.{kind}") for p in QKV]
            if all(part is not None for part in parts):
                out[f"{theirs}attn.c_attn.{kind}"] = np.concatenate(parts, axis=-1)
    if zero_biases:
        for name in gpt2_parameter_names(n_layer):
            if name.endswith(".bias") and name not in out:    # as wide as its layer's output
                width = out[name.removesuffix("bias") + "weight"].shape[-1]
                out[name] = np.zeros(width, dtype=np.float32)
    # copies: state_dict's arrays are read-only views of the model's parameters
    return {name: np.array(a, order="C") for name, a in out.items()}


def from_gpt2(state, n_layer, bias=True):
    """GPT-2 names -> arrays (Conv1D layout, no prefix) -> our state dict; bias=False: no biases.

    c_attn [D, 3D] splits into q_proj, k_proj, v_proj [D, D] (its bias [3D] into three [D]).
    Raises KeyError naming a GPT-2 parameter that is missing.
    """
    def get(name):
        if name not in state:
            raise KeyError(f"missing parameter {name!r}")
        return np.ascontiguousarray(state[name])

    kinds = ("weight", "bias") if bias else ("weight",)
    wanted = {**TOP_NAMES, **{f"blocks.{i}.{ours}": f"h.{i}.{theirs}" for i in range(n_layer)
                              for ours, theirs in BLOCK_NAMES.items()}}
    out = {ours: get(theirs) for ours, theirs in wanted.items() if ours.endswith(kinds)}
    for i in range(n_layer):
        for kind in kinds:
            fused = get(f"h.{i}.attn.c_attn.{kind}")                 # [D, 3D] or [3D]
            for p, part in zip(QKV, np.split(fused, 3, axis=-1)):   # Q, K, V in that order
                out[f"blocks.{i}.attn.{p}.{kind}"] = np.ascontiguousarray(part)
    return out


def load_gpt2_state(config, state, where):
    """GPT(config) in eval mode holding `state` (GPT-2 names, Conv1D layout, no prefix).

    Raises ValueError naming `where` and the parameter that is missing, unexpected, of
    the wrong shape or not finite, all checked before the model is built: so a config
    that asks for more than the file holds allocates nothing.
    """
    if config.n_layer > len(state):  # before listing n_layer blocks' names
        raise FileError(f"{where}: n_layer={config.n_layer} needs more parameters than the "
                         f"{len(state)} the file holds")
    shapes = gpt2_shapes(config)
    unexpected = sorted(set(state) - set(shapes))
    if unexpected:
        raise FileError(f"{where}: unexpected parameters {unexpected[:3]} for a GPT-2 with "
                         f"n_layer={config.n_layer}")
    for name, array in state.items():
        if array.shape != shapes[name]:
            raise FileError(f"{where}: {name} has shape {array.shape}; the config needs "
                             f"{shapes[name]}")
        if not np.isfinite(array).all():
            raise FileError(f"{where}: {name} holds NaN or infinite values")
    try:
        ours = from_gpt2(state, config.n_layer, bias=config.bias)
    except KeyError as error:
        raise FileError(f"{where}: {error.args[0]}") from None
    model = GPT(config)
    try:
        model.load_state_dict(ours)
    except (KeyError, ValueError) as error:
        raise FileError(f"{where}: {error.args[0]}") from None
    model.eval()
    return model
