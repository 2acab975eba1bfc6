"""The course page's cells: the README's three-line example, then one cell per section of the notes'
chapter 3 (3.1–3.8), each the reading guide's command and checks (docs/reading-guide.md,
docs/notebooks/) in Python that runs in the browser. Pictures go through show_graph(tensor)
and show_attention(weights, labels, title) (models/course/runtime.py), which the page draws.

`expect` lists text each cell prints when it runs unchanged: the tests run every cell in
CPython and check it, so a cell that the code's changes broke fails there first.
"""
SECTIONS = [
    {"id": "readme", "title": "The README's example: a gradient through broadcasting",
     "note": "x is [2, 3]; w is [3], broadcast over x's rows, so its gradient sums the rows.",
     "code": """\
from microtensor import Tensor
x = Tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
w = Tensor([1., 1., 2.], requires_grad=True)      # broadcast over x's rows
loss = (x * w).sum()
import viz
with viz.record_grad_norms():                     # the picture's gradient flow
    loss.backward()                               # w.grad [5. 7. 9.]: each column of x summed
print(w.grad)
show_graph(loss)
""", "expect": ["[5. 7. 9.]"]},

    {"id": "3.1", "title": "3.1 Why Q, K and V are separate",
     "note": "Q and K share d_k, V may be wider; softmax runs over the keys, so each row of A "
             "sums to 1 and A is not symmetric.",
     "code": """\
import numpy as np
import microtensor as mt
import nn
mt.manual_seed(0)
np.set_printoptions(precision=4, suppress=True)

T, D, d_k, d_v = 4, 8, 4, 6          # d_v need not equal d_k
X = mt.randn(T, D)
W_Q, W_K, W_V = (nn.Linear(D, n, bias=False) for n in (d_k, d_k, d_v))
Q, K, V = W_Q(X), W_K(X), W_V(X)     # row vectors: Q = X W_Q
Z, A = nn.scaled_dot_product_attention(Q, K, V)
print("Q", Q.shape, " K", K.shape, " V", V.shape, " A", A.shape, " Z", Z.shape)
a = A.numpy()
print("row sums:", a.sum(axis=-1))
print("A symmetric?", np.allclose(a, a.T))
try:
    nn.scaled_dot_product_attention(Q, mt.randn(T, d_k + 1), V)   # Q and K must share d_k
except ValueError as error:
    print("ValueError:", error)
import viz
loss = (Z * mt.randn(T, d_v)).sum()
with viz.record_grad_norms():        # note the gradient norms the picture draws
    loss.backward()
show_graph(loss)
show_attention(A, "abcdefghijklmnop"[:T], "A: each query's weights over the keys")
""", "expect": ["row sums: [1. 1. 1. 1.]", "A symmetric? False", "ValueError:"]},

    {"id": "3.2", "title": "3.2 Why divide by √d_k",
     "note": "q·k adds d_k terms of variance 1: its variance is d_k, and 1 after dividing by "
             "√d_k; unscaled, softmax saturates and passes little gradient.",
     "code": """\
import numpy as np
import microtensor as mt
mt.manual_seed(0)

rng = np.random.default_rng(0)
for d_k in (4, 16, 64, 256):
    q, k = rng.standard_normal((4000, d_k)), rng.standard_normal((4000, d_k))
    dots = (q * k).sum(axis=1)
    print(f"d_k {d_k:4d}: var(q·k) = {dots.var():7.1f}   var(q·k/√d_k) = "
          f"{(dots / np.sqrt(d_k)).var():.3f}")

# the engine's softmax backward is the Jacobian p_i(δ_ij − p_j) applied to the gradient
s = mt.Tensor(np.array([2.0, 1.0, 0.1]), requires_grad=True)
p = s.softmax()
g = np.array([1.0, 0.0, 0.0])
p.backward(g)
P = p.numpy()
print("engine :", s.grad)
print("J g    :", (np.diag(P) - np.outer(P, P)) @ g)
print("equal:", np.allclose(s.grad, (np.diag(P) - np.outer(P, P)) @ g))
""", "expect": ["var(q·k/√d_k)", "equal: True"]},

    {"id": "3.3", "title": "3.3 The causal mask goes in before softmax",
     "note": "−∞ on the future before softmax: rows still sum to 1. Zeroing after softmax: they "
             "do not. A row with every key blocked gets zeros, not NaN.",
     "code": """\
import numpy as np
import microtensor as mt
import nn
mt.manual_seed(0)
np.set_printoptions(precision=4, suppress=True)

T, d = 5, 4
q, k, v = mt.randn(T, d), mt.randn(T, d), mt.randn(T, d)
z, a = nn.scaled_dot_product_attention(q, k, v, is_causal=True)
print(a.numpy())
print("row sums, mask before softmax:", a.numpy().sum(axis=-1))
_, full = nn.scaled_dot_product_attention(q, k, v)
after = full.numpy() * ~nn.causal_mask(T, T)
print("row sums when zeroed after softmax:", after.sum(axis=-1))
all_blocked = np.ones((T, T), dtype=bool)
z0, a0 = nn.scaled_dot_product_attention(q, k, v, attn_mask=all_blocked)
print("all keys blocked -> weights", a0.numpy().max(), "output", z0.numpy().max(), "(no NaN)")
show_attention(a, [f"t{i}" for i in range(T)], "A with the causal mask (grey: blocked keys)")
""", "expect": ["row sums, mask before softmax: [1. 1. 1. 1. 1.]", "(no NaN)"]},

    {"id": "3.4", "title": "3.4 The hand-computed example",
     "note": "The notes' Q, K, V from the X and projections this project chose; A and Z to 4 "
             "decimals, with and without the causal mask.",
     "code": """\
import numpy as np
import microtensor as mt
import nn
np.set_printoptions(precision=4, suppress=True)

X = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
W = {"Q": [[1, 0], [0, 1], [1, 1]], "K": [[0, 1], [0, 0], [1, 1]], "V": [[1, -1], [0, 0], [1, 0]]}

def projection(weight):
    layer = nn.Linear(3, 2, bias=False)        # weight is [in, out]: Q = X W_Q
    layer.weight.data = np.array(weight, dtype=np.float64)
    return layer

def attend(x, is_causal):
    q, k, v = (projection(W[n])(mt.Tensor(x)) for n in "QKV")
    z, a = nn.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    return q.numpy(), k.numpy(), a.numpy(), z.numpy()

q, k, _, _ = attend(X, False)
print("Q =", q.tolist(), " K =", k.tolist(), " QKᵀ =", (q @ k.T).tolist())
for is_causal in (False, True):
    _, _, a, z = attend(X, is_causal)
    print("causal" if is_causal else "no mask", "\\nA =", a, "\\nZ =", z)
np.testing.assert_allclose(attend(X, False)[2], [[.6698, .3302], [.8044, .1956]], atol=5e-5)
np.testing.assert_allclose(attend(X, True)[3], [[2, -1], [1.8044, -.8044]], atol=5e-5)
print("matches the notes to 4 decimals")
X2 = X.copy()
X2[1] = [10, 10, 10]
for is_causal in (True, False):
    print("causal " if is_causal else "no mask", attend(X, is_causal)[3][0], "->",
          attend(X2, is_causal)[3][0])
show_attention(attend(X, True)[2], ["x1", "x2"], "A with the causal mask")
""", "expect": ["matches the notes to 4 decimals", "causal  [ 2. -1.] -> [ 2. -1.]"]},

    {"id": "3.5", "title": "3.5 Several heads, not one A copied",
     "note": "[B, T, D] → [B, H, T, d] → scores [B, H, T, T] → [B, T, D]; 4D² + 4D "
             "parameters whatever H is.",
     "code": """\
import microtensor as mt
import nn
mt.manual_seed(0)

B, T, D, H = 2, 5, 24, 3
mha = nn.MultiHeadAttention(D, H, keep_attention=True)   # keep the weights for the picture
x = mt.randn(B, T, D)
out = mha(x)
node, steps = out.grad_fn, []       # walk the graph back along each node's first input
while node is not None:
    steps.append(f"{node.op:10} {node.role or '':4} {node.shape}")
    node = node.inputs[0]
print("\\n".join(reversed(steps)))
for heads in (1, 2, 3, 4, 6):
    m = nn.MultiHeadAttention(D, heads)
    print(f"H = {heads}: d = {D // heads:2d}, parameters "
          f"{sum(p.data.size for p in m.parameters())} = 4D² + 4D = {4 * D * D + 4 * D}")
import viz
loss = (out ** 2).mean()
with viz.record_grad_norms():
    loss.backward()
show_graph(loss)
show_attention(mha.last_attention.numpy()[0], None, f"the {H} heads' A of sequence 0")
""", "expect": ["parameters 2400 = 4D² + 4D = 2400"]},

    {"id": "3.6", "title": "3.6 FFN, residual, norm",
     "note": "The FFN treats each position alone; y = x + F(x) passes the gradient to x "
             "unchanged along the skip. The GPT is decoder-only: pre-norm blocks.",
     "code": """\
import numpy as np
import microtensor as mt
import nn
from models import GPT, GPTConfig
mt.manual_seed(0)

ffn = nn.FeedForward(8, 32)
x = mt.randn(1, 5, 8)
perm = [3, 0, 4, 1, 2]
y, y_perm = ffn(x).numpy(), ffn(mt.Tensor(x.numpy()[:, perm])).numpy()
print("FFN commutes with permuting positions:", np.allclose(y[:, perm], y_perm))

x = mt.randn(3, 4, requires_grad=True, name="x")
w = mt.randn(4, 4, requires_grad=True, name="W")
y = nn.residual(x, (x @ w).tanh())            # y = x + F(x)
y.retain_grad()
import viz
loss = (y * mt.randn(3, 4)).sum()
with viz.record_grad_norms():
    loss.backward()
print("‖∂L/∂y‖ through the skip:", round(float(np.linalg.norm(y.grad)), 4),
      "  ‖∂L/∂x‖ total:", round(float(np.linalg.norm(x.grad)), 4))
show_graph(loss)

model = GPT(GPTConfig(vocab_size=20, block_size=16, n_layer=2, n_head=2, n_embd=32))
ids = np.random.default_rng(0).integers(0, 20, (2, 17))
_, gpt_loss = model(ids[:, :-1], ids[:, 1:])
print("a fresh GPT's loss:", round(gpt_loss.item(), 4), "≈ ln 20 =", round(np.log(20), 4))
""", "expect": ["FFN commutes with permuting positions: True", "a fresh GPT's loss:"]},

    {"id": "3.7", "title": "3.7 Training in parallel, generating step by step",
     "note": "One causal forward scores every position from the true history; generation "
             "appends one token at a time, and the KV cache gives the same tokens.",
     "code": """\
import numpy as np
import microtensor as mt
import nn
from models import GPT, CharTokenizer, GPTConfig
mt.manual_seed(0)

tok = CharTokenizer.from_text("ABCDEFGH")
model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=8, n_layer=2, n_head=2, n_embd=32))
model.eval()
ids = np.array([tok.encode("ABC")], dtype=np.int64)  # the browser's numpy defaults to int32
with mt.no_grad():
    parallel = model(ids)[0].numpy()                      # one forward over [A, B, C]
    prefixes = [model(ids[:, :t + 1])[0].numpy()[:, -1] for t in range(3)]
for t in range(3):
    print(f"position {t}: same logits as the prefix {tok.decode(ids[0, :t + 1])!r} alone:",
          np.allclose(parallel[:, t], prefixes[t], atol=1e-5))
prompt = np.array([tok.encode("AB")], dtype=np.int64)
data = np.array(tok.encode("ABCDEFGH" * 40), dtype=np.int64)
opt = nn.optim.AdamW(model.parameters(), lr=3e-3)
model.train()
rng = np.random.default_rng(0)
for _ in range(40):
    starts = rng.integers(0, len(data) - 9, 8)
    batch = np.stack([data[s:s + 9] for s in starts])
    _, loss = model(batch[:, :-1], batch[:, 1:])
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
with_cache = model.generate(prompt, 6, top_k=1, use_cache=True)
without = model.generate(prompt, 6, top_k=1, use_cache=False)
print("loss", round(loss.item(), 3), "->", tok.decode(with_cache[0]),
      "| cache and recompute agree:", np.array_equal(with_cache, without))
""", "expect": ["alone: True", "cache and recompute agree: True"]},

    {"id": "3.8", "title": "3.8 The backward pass and the cost",
     "note": "From Z = AV: ∂L/∂V = AᵀG and ∂L/∂A = GVᵀ; a blocked key gets no gradient. One "
             "layer's FLOPs: 8BTD² for the projections, 4BT²D for QKᵀ and AV.",
     "code": """\
import numpy as np
import microtensor as mt
import nn
mt.manual_seed(0)

T, d = 4, 3
q, k, v = (mt.randn(T, d, requires_grad=True, name=n) for n in "qkv")
z, a = nn.scaled_dot_product_attention(q, k, v, is_causal=True)
a.retain_grad()
G = np.random.default_rng(0).standard_normal((T, d))
loss = (z * mt.Tensor(G)).sum()
import viz
with viz.record_grad_norms():
    loss.backward()
A, V = a.numpy(), v.numpy()
print("∂L/∂V = AᵀG:", np.allclose(v.grad, A.T @ G))
print("∂L/∂A = GVᵀ:", np.allclose(a.grad, G @ V.T))
print("future keys get no gradient through A:",
      np.abs(a.grad * A)[nn.causal_mask(T, T)].max() == 0)
show_graph(loss)

B, T, D, H = 2, 16, 32, 4
mha = nn.MultiHeadAttention(D, H, bias=False)
with mt.profile() as prof:
    mha(mt.randn(B, T, D), is_causal=True)
print(prof.table())
print(f"8BTD² + 4BT²D = {8 * B * T * D * D + 4 * B * T * T * D:,}")
""", "expect": ["∂L/∂V = AᵀG: True", "∂L/∂A = GVᵀ: True",
                "future keys get no gradient through A: True"]},
]
