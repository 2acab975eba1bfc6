"""`microtensor shapes`: every tensor's shape inside one multi-head attention forward.

The shapes are read off the recorded graph, not computed from formulas; they answer notes
3.1 and 3.5's closed-book check.
"""

from .checks import count
from .sizes import add_size_flags, check_sizes


def add_parser(subparsers):
    p = subparsers.add_parser(
        "shapes", help="print the shapes inside one multi-head attention forward",
        description="Build nn.MultiHeadAttention(d_model, heads), run it on a random batch "
                    "and print the shape of W_Q, Q, the per-head Q and K, S, A, the per-head "
                    "context and the merged output, as recorded in the computation graph. "
                    "With --kv-seq it is cross-attention: the queries come from the input "
                    "and the keys and values from a second sequence of that length.")
    add_size_flags(p, seq=5, d_model=24, heads=3)
    p.add_argument("--kv-seq", metavar="T_K", type=count(1), default=None,
                   help="length of the sequence the keys and values come from: cross-attention "
                        "(default: causal self-attention, T_k = T)")
    p.add_argument("--seed", type=count(0), default=0, help="random seed (default: 0)")
    p.set_defaults(run=run)


def attention_shapes(batch, seq, d_model, heads, seed=0, kv_seq=None):
    """([(what, symbolic shape, shape)], A) for one MHA forward, the shapes read from its graph.

    kv_seq=None: causal self-attention over the input; otherwise cross-attention from the
    input [B, T, D] to a context [B, kv_seq, D].
    """
    import microtensor
    import nn
    import viz

    microtensor.manual_seed(seed)
    mha = nn.MultiHeadAttention(d_model, heads, keep_attention=True)
    x = microtensor.randn(batch, seq, d_model, requires_grad=True, name="X")
    if kv_seq is None:
        out, tk = mha(x, is_causal=True), "T"
        rows = [("X (input)", "[B, T, D]", x.shape)]
    else:
        context = microtensor.randn(batch, kv_seq, d_model, requires_grad=True, name="context")
        out, tk = mha(x, context=context), "T_k"
        rows = [("X (queries come from it)", "[B, T, D]", x.shape),
                ("context (keys and values)", "[B, T_k, D]", context.shape)]
    nodes, edges = viz.trace(out)
    by_role = {n.role: n for n in nodes.values() if n.role}
    feeding = {(e.dst, e.slot): nodes[e.src] for e in edges}

    def op_in(module, op):
        return next(n for n in nodes.values() if n.module == module and n.op == op)

    qk = by_role["QKᵀ"]
    out_matmul = op_in("out_proj", "matmul")
    d = mha.head_dim
    w_q = mha.q_proj.weight
    rows += [
        ("W_Q = q_proj.weight", "[D, D] = [D, H·d]", w_q.shape),
        ("W_Q of head 0 = W_Q[:, 0:d]", "[D, d]", w_q.data[:, 0:d].shape),
        ("Q = X W_Q", "[B, T, D]", op_in("q_proj", "matmul").shape),
        ("Q split into heads", "[B, H, T, d]", feeding[(qk.key, 0)].shape),
        ("Kᵀ per head", f"[B, H, d, {tk}]", feeding[(qk.key, 1)].shape),
        ("S = QKᵀ/√d", f"[B, H, T, {tk}]", by_role["S"].shape),
        ("A = softmax(S) over keys", f"[B, H, T, {tk}]", by_role["A"].shape),
        ("Z per head = A V", "[B, H, T, d]", by_role["Z"].shape),
        ("Z merged (heads concatenated)", "[B, T, D]", feeding[(out_matmul.key, 0)].shape),
        ("output = Z W_O", "[B, T, D]", out.shape),
    ]
    return rows, mha.last_attention


def run(args):
    kv_seq = getattr(args, "kv_seq", None)
    check_sizes(args)
    rows, a = attention_shapes(args.batch, args.seq, args.d_model, args.heads, args.seed, kv_seq)
    kind = ("causal self-attention" if kv_seq is None
            else f"cross-attention, T_k = {kv_seq} keys and values")
    print(f"B={args.batch}, T={args.seq}, D={args.d_model}, H={args.heads}, "
          f"d = D/H = {args.d_model // args.heads}  ({kind})")
    for what, symbolic, shape in rows:
        print(f"  {what:<32}{symbolic:<20}{str(list(shape))}")
    rows_sum, cols_sum = a.data.sum(axis=-1), a.data[0, 0].sum(axis=-2)
    print(f"softmax runs along the key axis: every row of A sums to 1 (min "
          f"{rows_sum.min():.6f}, max {rows_sum.max():.6f}); the columns of head 0 sum to "
          f"{', '.join(f'{c:.3f}' for c in cols_sum)}: over queries it is no distribution")
    return 0
