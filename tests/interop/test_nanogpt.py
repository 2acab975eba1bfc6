"""nanoGPT: exact round trip; a nanoGPT-shaped PyTorch model loads the export and gives our logits.

Also: the AdamW moments land on nanoGPT's parameters; what we cannot hold is refused.
"""
import pickle

import numpy as np
import pytest

import microtensor
import nn
from models import GPT, CharTokenizer, GPTConfig
from models.interop import export_nanogpt, import_nanogpt
from models.interop.nanogpt import meta, nanogpt_state

torch = pytest.importorskip("torch")

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak. Ça 日本\n" * 4


def random_gpt(bias=True, seed=0, **config):
    """A small GPT whose every parameter is random, so that each mapping is tested."""
    microtensor.manual_seed(seed)
    tok = CharTokenizer.from_text(TEXT)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=2, n_head=2,
                          n_embd=8, bias=bias, **config))
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.data[...] = rng.normal(0.0, 0.3, p.shape)
    return model.eval(), tok


class TorchGPT(torch.nn.Module):
    """nanoGPT's module tree and forward (pre-norm, exact GELU, tied head), written here."""

    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, bias):
        super().__init__()
        L, D = torch.nn.Linear, n_embd

        def block():
            return torch.nn.ModuleDict({
                "ln_1": torch.nn.LayerNorm(D, bias=bias),
                "attn": torch.nn.ModuleDict({"c_attn": L(D, 3 * D, bias=bias),
                                             "c_proj": L(D, D, bias=bias)}),
                "ln_2": torch.nn.LayerNorm(D, bias=bias),
                "mlp": torch.nn.ModuleDict({"c_fc": L(D, 4 * D, bias=bias),
                                             "c_proj": L(4 * D, D, bias=bias)})})

        self.n_head = n_head
        self.transformer = torch.nn.ModuleDict({
            "wte": torch.nn.Embedding(vocab_size, D), "wpe": torch.nn.Embedding(block_size, D),
            "h": torch.nn.ModuleList(block() for _ in range(n_layer)),
            "ln_f": torch.nn.LayerNorm(D, bias=bias)})
        self.lm_head = L(D, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx):
        t = self.transformer
        B, T = idx.shape
        x = t.wte(idx) + t.wpe(torch.arange(T))
        for h in t.h:
            q, k, v = h.attn.c_attn(h.ln_1(x)).split(x.shape[-1], dim=2)
            q, k, v = (z.view(B, T, self.n_head, -1).transpose(1, 2) for z in (q, k, v))
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + h.attn.c_proj(y.transpose(1, 2).reshape(B, T, -1))
            x = x + h.mlp.c_proj(torch.nn.functional.gelu(h.mlp.c_fc(h.ln_2(x))))
        return self.lm_head(t.ln_f(x))

    def configure_optimizer(self):
        """nanoGPT's groups: dim >= 2 decays, the rest does not, in named_parameters order."""
        params = list(self.parameters())
        return torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2],
                                   "weight_decay": 0.1},
                                  {"params": [p for p in params if p.dim() < 2],
                                   "weight_decay": 0.0}], lr=1e-3)


def torch_twin(checkpoint):
    twin = TorchGPT(**{k: v for k, v in checkpoint["model_args"].items() if k != "dropout"})
    twin.load_state_dict(checkpoint["model"])           # strict: every name, every shape
    return twin.eval()


def exported(tmp_path, model, tok, **kwargs):
    export_nanogpt(model, tok, tmp_path, **kwargs)
    return torch.load(tmp_path / "ckpt.pt", weights_only=True)


@pytest.mark.parametrize("bias", [True, False])
def test_ours_to_nanogpt_to_ours_gives_every_array_back(tmp_path, bias):
    model, tok = random_gpt(bias=bias)
    export_nanogpt(model, tok, tmp_path, train_state={"iter": 250, "best_val_loss": 1.5})
    back, back_tok, state = import_nanogpt(str(tmp_path / "ckpt.pt"))
    assert back.config == model.config, f"expected {model.config}, got {back.config}"
    assert back_tok.chars == tok.chars
    assert (state["iter"], state["best_val_loss"]) == (250, 1.5)
    ours, theirs = model.state_dict(), back.state_dict()
    assert list(theirs) == list(ours)
    for name in ours:
        np.testing.assert_array_equal(theirs[name], ours[name], err_msg=name)


@pytest.mark.parametrize("bias", [True, False])
def test_a_nanogpt_shaped_model_loads_the_export_and_gives_our_logits(tmp_path, bias):
    model, tok = random_gpt(bias=bias)
    twin = torch_twin(exported(tmp_path, model, tok))
    ids = tok.encode("Before we 日本")
    with torch.no_grad():
        theirs = twin(torch.tensor([ids]))[0].numpy()
    np.testing.assert_allclose(theirs, model(np.array([ids]))[0].data[0], rtol=0, atol=1e-5)


def test_linear_weights_are_transposed_for_nanogpt(tmp_path):
    """torch.nn.Linear stores [out, in] and computes x Wᵀ; ours stores [in, out], x W."""
    model, tok = random_gpt()
    checkpoint = exported(tmp_path, model, tok)
    w = checkpoint["model"]["transformer.h.0.mlp.c_fc.weight"]
    assert tuple(w.shape) == (32, 8), f"expected [out, in] = (32, 8), got {tuple(w.shape)}"
    np.testing.assert_array_equal(w.numpy(), model.blocks[0].mlp.fc.weight.data.T)
    c_attn = checkpoint["model"]["transformer.h.0.attn.c_attn.weight"].numpy()   # [3D, D]
    for rows, layer in zip(np.split(c_attn, 3), ("q_proj", "k_proj", "v_proj")):
        np.testing.assert_array_equal(rows, getattr(model.blocks[0].attn, layer).weight.data.T)


X = np.array([list(range(12))])                           # one batch of ids and next ids
Y = np.array([list(range(1, 13))])


def trained_optimizer(model, steps=2):
    """Our AdamW in nanoGPT's groups after `steps` steps: moments and step counts not zero."""
    groups = [{"params": [p for p in model.parameters() if p.ndim >= 2]},
              {"params": [p for p in model.parameters() if p.ndim < 2], "weight_decay": 0.0}]
    optimizer = nn.optim.AdamW(groups, lr=1e-3)
    for _ in range(steps):
        optimizer.zero_grad()
        model(X, Y)[1].backward()
        optimizer.step()
    return optimizer


def test_adamw_moments_land_on_nanogpts_parameters(tmp_path):
    model, tok = random_gpt()
    names = [n for n, _ in model.named_parameters()]
    optimizer = trained_optimizer(model)
    moments = {n: optimizer.state[p] for n, p in zip(names, model.parameters())}
    checkpoint = exported(tmp_path, model, tok, optimizer=optimizer)
    twin = torch_twin(checkpoint)
    torch_optimizer = twin.configure_optimizer()
    torch_optimizer.load_state_dict(checkpoint["optimizer"])
    by_name = dict(twin.named_parameters())
    fc = torch_optimizer.state[by_name["transformer.h.1.mlp.c_fc.weight"]]
    np.testing.assert_array_equal(fc["exp_avg"].numpy(),
                                  moments["blocks.1.mlp.fc.weight"]["exp_avg"].T)
    assert float(fc["step"]) == 2
    ln = torch_optimizer.state[by_name["transformer.h.0.ln_2.bias"]]
    np.testing.assert_array_equal(ln["exp_avg_sq"].numpy(),
                                  moments["blocks.0.ln_2.bias"]["exp_avg_sq"])
    for name, p in by_name.items():                    # every moment has its parameter's shape
        assert torch_optimizer.state[p]["exp_avg"].shape == p.shape, name
    decay, no_decay = torch_optimizer.param_groups      # our hyper-parameters came along
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.01, 0.0)
    assert tuple(decay["betas"]) == (0.9, 0.999) and decay["eps"] == 1e-8


def test_the_next_adamw_step_in_pytorch_is_our_next_step(tmp_path):
    """Moments, step counts and hyper-parameters all right: one more step agrees to float error."""
    model, tok = random_gpt()
    optimizer = trained_optimizer(model)
    checkpoint = exported(tmp_path, model, tok, optimizer=optimizer)
    twin = torch_twin(checkpoint).train()
    torch_optimizer = twin.configure_optimizer()
    torch_optimizer.load_state_dict(checkpoint["optimizer"])
    logits = twin(torch.from_numpy(X))
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), torch.from_numpy(Y).flatten())
    loss.backward()
    torch_optimizer.step()
    optimizer.zero_grad()
    model(X, Y)[1].backward()
    optimizer.step()
    before, d = checkpoint["model"], model.config.n_embd
    for name, ours in nanogpt_state(model).items():
        theirs = twin.state_dict()[name].numpy()
        assert np.abs(theirs - before[name].numpy()).max() > 0, f"{name} did not move"
        if name.endswith("c_attn.bias"):
            # K's bias adds q·b to every score of a row, which softmax ignores: its gradient
            # is 0 up to rounding, and Adam scales rounding noise up to a full step
            theirs, ours = np.delete(theirs, np.s_[d:2 * d]), np.delete(ours, np.s_[d:2 * d])
        np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-6, err_msg=name)


def test_compiled_prefix_and_old_mask_buffer_are_accepted(tmp_path):
    model, tok = random_gpt()
    checkpoint = exported(tmp_path, model, tok)
    weights = {"_orig_mod." + k: v for k, v in checkpoint["model"].items()}
    weights["_orig_mod.transformer.h.0.attn.bias"] = torch.ones(1, 1, 16, 16).tril()
    torch.save(dict(checkpoint, model=weights), tmp_path / "ckpt.pt")
    back, _, _ = import_nanogpt(str(tmp_path / "ckpt.pt"))
    np.testing.assert_array_equal(back.wte.weight.data, model.wte.weight.data)


@pytest.mark.parametrize("config,why", [({"activation": "relu"}, "GELU"),
                                        ({"norm_first": False}, "post-norm")])
def test_a_model_nanogpt_cannot_express_is_refused(tmp_path, config, why):
    model, tok = random_gpt(**config)
    with pytest.raises(ValueError, match=why):
        export_nanogpt(model, tok, tmp_path)


def test_a_checkpoint_without_a_character_map_is_refused(tmp_path):
    model, tok = random_gpt()
    export_nanogpt(model, tok, tmp_path)
    (tmp_path / "meta.pkl").unlink()
    with pytest.raises(FileNotFoundError, match="GPT-2's BPE"):
        import_nanogpt(str(tmp_path / "ckpt.pt"))


def test_a_vocabulary_larger_than_the_character_map_is_refused(tmp_path):
    model, tok = random_gpt()
    export_nanogpt(model, tok, tmp_path)
    small = CharTokenizer(tok.chars[:-1])
    (tmp_path / "meta.pkl").write_bytes(pickle.dumps(meta(small)))
    with pytest.raises(ValueError, match="every id needs exactly one"):
        import_nanogpt(str(tmp_path / "ckpt.pt"))


def test_a_checkpoint_holding_objects_is_not_unpickled(tmp_path):
    model, tok = random_gpt()
    export_nanogpt(model, tok, tmp_path)
    torch.save({"model_args": {}, "model": {}, "payload": microtensor.Tensor([1.0])},
               tmp_path / "ckpt.pt")
    with pytest.raises(ValueError, match="not a readable nanoGPT checkpoint"):
        import_nanogpt(str(tmp_path / "ckpt.pt"))


def test_meta_and_bins_are_nanogpts_prepare_format(tmp_path):
    model, tok = random_gpt()
    export_nanogpt(model, tok, tmp_path, text=TEXT)
    with open(tmp_path / "meta.pkl", "rb") as f:
        m = pickle.load(f)                               # our own file, as nanoGPT reads it
    assert m == {"vocab_size": tok.vocab_size, "itos": dict(enumerate(tok.chars)),
                 "stoi": tok.stoi}
    train = np.fromfile(tmp_path / "train.bin", dtype=np.uint16)
    val = np.fromfile(tmp_path / "val.bin", dtype=np.uint16)
    assert tok.decode(np.concatenate([train, val]).astype(np.int64)) == TEXT
    assert len(train) == int(0.9 * len(TEXT))
