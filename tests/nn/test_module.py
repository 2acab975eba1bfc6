"""nn.Module bookkeeping: parameter names and order, shared weights, state_dict.

Also train/eval, the containers, and module paths on graph nodes.
"""
import numpy as np
import pytest

import microtensor as mt
import nn


class Stack(nn.Module):
    """embed -> blocks (a ModuleList of TransformerBlocks) -> head, like a tiny GPT."""

    def __init__(self, vocab=7, d=8, n_heads=2, n_blocks=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            [nn.TransformerBlock(d, n_heads, 2 * d) for _ in range(n_blocks)]
        )
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x) * 2.0  # one op that belongs to the root itself


BLOCK_NAMES = [
    "ln_1.weight",
    "ln_1.bias",
    "attn.q_proj.weight",
    "attn.q_proj.bias",
    "attn.k_proj.weight",
    "attn.k_proj.bias",
    "attn.v_proj.weight",
    "attn.v_proj.bias",
    "attn.out_proj.weight",
    "attn.out_proj.bias",
    "ln_2.weight",
    "ln_2.bias",
    "mlp.fc.weight",
    "mlp.fc.bias",
    "mlp.proj.weight",
    "mlp.proj.bias",
]


def test_named_parameters_lists_dotted_names_in_assignment_order():
    names = [n for n, _ in Stack().named_parameters()]
    expected = (["embed.weight"] + [f"blocks.0.{n}" for n in BLOCK_NAMES]
                + [f"blocks.1.{n}" for n in BLOCK_NAMES] + ["head.weight", "head.bias"])
    assert names == expected, f"expected names\n{expected}\ngot\n{names}"


def test_named_parameters_and_parameters_agree_on_objects():
    model = Stack()
    named = [p for _, p in model.named_parameters()]
    listed = model.parameters()
    assert all(a is b for a, b in zip(named, listed)) and len(named) == len(listed), (
        "parameters() should be the Parameters of named_parameters(), same order")
    total = sum(p.size for p in listed)
    assert model.num_parameters() == total, (
        f"expected {total} scalars, got {model.num_parameters()}"
    )


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3, bias=False)
        self.b = nn.Linear(3, 3, bias=False)
        self.b.weight = self.a.weight  # one matrix used by both layers

    def forward(self, x):
        return self.b(self.a(x))


def test_shared_parameter_is_listed_once_under_its_first_name():
    model = Tied()
    named = list(model.named_parameters())
    assert [n for n, _ in named] == ["a.weight"], (
        f"expected ['a.weight'], got {[n for n, _ in named]}"
    )
    assert model.num_parameters() == 9, f"expected 9 scalars, got {model.num_parameters()}"


def test_shared_parameter_gradient_sums_both_uses():
    # y = (x W) W uses W twice: its gradient must be the sum of both uses' contributions
    model = Tied()
    w = model.a.weight
    w.data = w.data.astype(np.float64)
    x = mt.Tensor(np.random.default_rng(1).normal(size=(2, 3)))
    assert mt.gradcheck(lambda w_: model(x).sum(), [w]), "gradient of a tied weight"


def _outputs(model, ids):
    with mt.no_grad():
        return model(ids).data.copy()


def test_state_dict_round_trip_into_fresh_module_gives_identical_outputs():
    ids = np.array([[1, 2, 3, 4]])
    mt.manual_seed(1)
    source = Stack()
    mt.manual_seed(2)
    target = Stack()
    before = _outputs(target, ids)
    assert not np.allclose(before, _outputs(source, ids)), "differently seeded models should differ"
    target.load_state_dict(source.state_dict())
    got, expected = _outputs(target, ids), _outputs(source, ids)
    assert np.array_equal(got, expected), f"after loading: expected\n{expected}\ngot\n{got}"


def test_state_dict_holds_read_only_views_and_load_writes_into_the_same_parameters():
    model = nn.Linear(2, 2)
    state = model.state_dict()
    assert list(state) == ["weight", "bias"], f"expected keys ['weight', 'bias'], got {list(state)}"
    assert np.shares_memory(state["weight"], model.weight.data), "torch's shares the storage"
    with pytest.raises(ValueError, match="read-only"):
        state["weight"][...] = 7.0  # a write would bypass the version counts: load_state_dict
    state = {name: np.array(array) for name, array in state.items()}
    state["weight"][...] = 7.0
    assert not np.any(model.weight.data == 7.0), "editing a copy must not edit the model"
    weight_before = model.weight
    model.load_state_dict(state)
    assert model.weight is weight_before, (
        "load_state_dict must keep the Parameter objects (optimizers hold them)"
    )
    assert np.all(model.weight.data == 7.0), f"expected all 7.0, got {model.weight.data}"


def test_load_state_dict_accepts_tensor_values():
    source, target = nn.Linear(2, 3), nn.Linear(2, 3)
    target.load_state_dict({name: mt.Tensor(array) for name, array in source.state_dict().items()})
    assert np.array_equal(target.weight.data, source.weight.data), (
        f"expected weight\n{source.weight.data}\ngot\n{target.weight.data}")


def test_load_state_dict_missing_key_raises_key_error_naming_it():
    state = nn.Linear(2, 3).state_dict()
    del state["bias"]
    with pytest.raises(KeyError, match="bias"):
        nn.Linear(2, 3).load_state_dict(state)


def test_load_state_dict_unexpected_key_raises_key_error_naming_it():
    state = nn.Linear(2, 3).state_dict()
    state["extra.weight"] = np.zeros(3)
    with pytest.raises(KeyError, match=r"extra\.weight"):
        nn.Linear(2, 3).load_state_dict(state)


def test_load_state_dict_wrong_shape_raises_value_error_naming_both_shapes():
    state = nn.Linear(2, 3).state_dict()
    state["weight"] = np.zeros((3, 2))
    with pytest.raises(ValueError) as error:
        nn.Linear(2, 3).load_state_dict(state)
    message = str(error.value)
    assert "weight" in message and "(3, 2)" in message and "(2, 3)" in message, (
        f"expected the name and both shapes (3, 2) and (2, 3) in the message, got: {message}")


def test_train_and_eval_propagate_to_every_submodule():
    model = Stack()
    assert model.eval() is model, "eval() returns the module"
    modes = {path: m.training for path, m in model.named_modules()}
    assert not any(modes.values()), f"expected every module in eval mode, got {modes}"
    model.train()
    modes = {path: m.training for path, m in model.named_modules()}
    assert all(modes.values()), f"expected every module in train mode, got {modes}"
    assert "blocks.1.attn.out_proj" in modes, f"named_modules misses nested layers: {list(modes)}"


def test_eval_turns_off_dropout_nested_in_containers():
    model = nn.Sequential(nn.ModuleList([nn.Linear(4, 4)]), nn.Sequential(nn.Dropout(0.5)))
    x = mt.Tensor(np.ones((3, 4), dtype=np.float32))
    dropout_only = model[1]
    model.eval()
    assert np.array_equal(dropout_only(x).data, x.data), (
        "Dropout inside Sequential should be off after eval()"
    )
    model.train()
    assert not np.array_equal(dropout_only(x).data, x.data), (
        "Dropout should be active again after train()"
    )


def test_sequential_registers_parameters_and_chains_calls():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"], f"got {names}"
    assert len(model) == 3 and isinstance(model[1], nn.ReLU)
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    l1, l2 = model[0], model[2]
    expected = np.maximum(x @ l1.weight.data + l1.bias.data, 0) @ l2.weight.data + l2.bias.data
    got = model(mt.Tensor(x)).data
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6,
                               err_msg="Sequential(a, relu, b)(x) vs relu(x W1 + b1) W2 + b2")


def test_module_list_registers_parameters_with_index_names():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2, bias=False)])
    layers.append(nn.LayerNorm(2))
    names = [n for n, _ in layers.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.weight", "2.weight", "2.bias"], f"got {names}"
    assert len(layers) == 3 and layers[2] is list(layers)[2]


def _leaf(node):
    """The leaf tensor behind an input node (an AccumulateGrad), else None."""
    return node.variable if isinstance(node, mt.autograd.AccumulateGrad) else None


def _node_reading(nodes, tensor, op):
    """The node of kind `op` that takes `tensor` as an input."""
    found = [n for n in nodes if n.op == op and any(_leaf(i) is tensor for i in n.inputs)]
    assert len(found) == 1, f"expected one '{op}' node reading that tensor, found {len(found)}"
    return found[0]


def test_every_op_records_the_path_of_the_module_that_ran_it(graph_nodes):
    model = Stack()
    nodes = graph_nodes(model(np.array([[1, 2, 3]])))
    q_matmul = _node_reading(nodes, model.blocks[0].attn.q_proj.weight, "matmul")
    assert q_matmul.module == "blocks.0.attn.q_proj", (
        f"expected 'blocks.0.attn.q_proj', got {q_matmul.module!r}"
    )
    ln = _node_reading(nodes, model.blocks[1].ln_2.weight, "layer_norm")
    assert ln.module == "blocks.1.ln_2", f"expected 'blocks.1.ln_2', got {ln.module!r}"
    emb = _node_reading(nodes, model.embed.weight, "embedding")
    assert emb.module == "embed", f"expected 'embed', got {emb.module!r}"
    softmaxes = sorted(n.module for n in nodes if n.op == "softmax")
    assert softmaxes == ["blocks.0.attn", "blocks.1.attn"], f"softmax paths: got {softmaxes}"
    residuals = sorted(n.module for n in nodes if n.role == "residual")
    assert residuals == ["blocks.0"] * 2 + ["blocks.1"] * 2, f"residual add paths: got {residuals}"
    # in general: an op that reads a parameter runs in the module that owns it
    owner = {id(p): name.rsplit(".", 1)[0] for name, p in model.named_parameters()}
    wrong = [(n.op, n.module, owner[id(_leaf(i))]) for n in nodes for i in n.inputs
             if id(_leaf(i)) in owner and n.module != owner[id(_leaf(i))]]
    assert not wrong, f"(op, recorded path, owning module) mismatches: {wrong}"
    root_ops = [n.op for n in nodes if n.module == ""]
    assert root_ops == ["mul"], (
        f"only the root's own `* 2.0` runs outside submodules; got {root_ops}"
    )


def test_a_submodule_called_alone_records_its_path_in_the_tree_it_was_built_into(graph_nodes):
    model = Stack()
    q_proj = model.blocks[0].attn.q_proj
    alone = q_proj(mt.Tensor(np.ones((1, 2, 8), dtype=np.float32)))
    assert alone.grad_fn.module == "blocks.0.attn.q_proj", (
        f"paths are fixed when the tree is built: expected 'blocks.0.attn.q_proj', "
        f"got {alone.grad_fn.module!r}")
    assert q_proj.weight.name == "blocks.0.attn.q_proj.weight", f"got {q_proj.weight.name!r}"
    nodes = graph_nodes(model(np.array([[1, 2]])))
    node = _node_reading(nodes, q_proj.weight, "matmul")
    assert node.module == "blocks.0.attn.q_proj", (
        f"expected 'blocks.0.attn.q_proj', got {node.module!r}"
    )


def test_parameters_are_named_by_their_dotted_path_after_a_call():
    model = Stack()
    model(np.array([[0, 1]]))
    got = {name: p.name for name, p in model.named_parameters()}
    wrong = {n: g for n, g in got.items() if g != n}
    assert not wrong, (
        f"parameter .name should equal its dotted name; mismatches (expected: got): {wrong}"
    )


def test_names_are_fixed_when_the_tree_is_built_and_a_tied_weight_keeps_its_first_name():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)
            self.b.weight = self.a.weight  # tied, as GPT's LM head and wte

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Tied()

    model = Outer()
    names = {p.name for p in model.parameters()}
    listed = {n for n, _ in model.named_parameters()}
    assert names == listed == {"inner.a.weight", "inner.a.bias", "inner.b.bias"}, (
        f"expected parameter names to match named_parameters(); got {names} vs {listed}")
    model.inner.b(mt.Tensor(np.ones((1, 2), dtype=np.float32)))
    assert model.inner.a.weight.name == "inner.a.weight", "calling a module renamed a weight"


def test_a_module_assigned_under_two_names_keeps_its_first_path_everywhere():
    shared = nn.Linear(2, 2)

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = shared
            self.b = shared  # e.g. a tied encoder/decoder embedding module

    model = Tied()
    listed = [name for name, _ in model.named_parameters()]
    assert listed == ["a.weight", "a.bias"], f"expected ['a.weight', 'a.bias'], got {listed}"
    assert (shared.weight.name, shared._path) == ("a.weight", "a"), (
        f"pictures and scopes must use the listed path 'a', got {shared.weight.name!r}, "
        f"{shared._path!r}")
    modules = [name for name, _ in model.named_modules()]
    assert modules == ["", "a"], f"expected ['', 'a'], got {modules}"
