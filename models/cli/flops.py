"""`microtensor flops`: one attention layer's FLOPs and memory against the notes' formulas (3.8).

The FLOPs and the bytes saved for backward are measured with microtensor.profile().
"""

from .sizes import add_size_flags, check_sizes


def add_parser(subparsers):
    p = subparsers.add_parser(
        "flops", help="count the FLOPs and memory of one attention layer",
        description="Run one multi-head self-attention forward under microtensor.profile() "
                    "and compare the counted FLOPs with 8BTD² (projections) and 4BT²D "
                    "(QKᵀ and AV), and the attention matrix with B·H·T² elements.")
    add_size_flags(p, seq=64, d_model=128, heads=4)
    p.set_defaults(run=run)


def measure(batch, seq, d_model, heads):
    """({name: (measured, formula)}, the profiler) for one causal MHA forward of this size."""
    import numpy as np

    import microtensor
    import nn

    microtensor.manual_seed(0)
    mha = nn.MultiHeadAttention(d_model, heads, bias=False)
    x = microtensor.randn(batch, seq, d_model, requires_grad=True)
    with microtensor.profile() as prof:
        mha(x, is_causal=True)
    b, t, d, h = batch, seq, d_model, heads
    projections = prof.flops(op="matmul", where=lambda r: r.module.endswith("_proj"))
    attention = prof.flops(op="matmul", where=lambda r: not r.module.endswith("_proj"))
    a_elements = sum(int(np.prod(r.out_shape)) for r in prof.records if r.op == "softmax")
    return {
        "projections (Q, K, V, O matmuls) FLOPs": (projections, 8 * b * t * d * d),
        "QKᵀ + AV FLOPs": (attention, 4 * b * t * t * d),
        "attention matrix A elements": (a_elements, b * h * t * t),
        "bytes saved for backward by softmax": (prof.saved_bytes(op="softmax"), b * h * t * t * 4),
    }, prof


def run(args):
    check_sizes(args)
    rows, prof = measure(args.batch, args.seq, args.d_model, args.heads)
    print(f"one multi-head self-attention layer, B={args.batch}, T={args.seq}, "
          f"D={args.d_model}, H={args.heads} (a multiply-add counts 2 FLOPs)")
    formulas = ["8·B·T·D²", "4·B·T²·D", "B·H·T²", "B·H·T² × 4 bytes (float32)"]
    for (name, (measured, expected)), formula in zip(rows.items(), formulas):
        print(f"  {name:<40} measured {measured:>14,}   {formula} = {expected:,}")
    print("all ops of the forward, by op (the formulas leave out everything but the matmuls: "
          "softmax, masking, scaling and reshapes count one FLOP per output element here):")
    print("  " + prof.table().replace("\n", "\n  "))
    return 0
