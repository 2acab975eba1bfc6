"""`microtensor gradflow`: the gradient norm ‖∂L/∂x_l‖ at each block's input of a pre-norm and a
post-norm GPT, at initialisation and, with --steps, after some training (notes 3.6).

Both models start from the same weights (same seed, same parameter shapes), see the same
batches and measure on the same fixed batch; only where the LayerNorm sits differs. The
norms come from one `backward()` each, read off the graph by `viz.module_input_grad_norms`.

What can make the numbers differ between machines is pinned where it can be: the seed
fixes weights and batches (numpy's PCG64 streams are stable across versions), the models
compute in float64, and matrix products run on one BLAS thread, which fixes their summation
order on a given BLAS. The at-initialisation numbers then repeat to every printed digit.
The trained ones cannot be pinned fully: hundreds of AdamW steps without warmup amplify
any difference in the last bit (two BLAS threads instead of one moved pre-norm's final
loss from 2.66 to 2.61 in float64), so compare the shapes across depth, not the digits.

Pre-norm's identity path carries ∂L/∂x_L to every block; post-norm's passes through every
LayerNorm (Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture").
"""

from .checks import count, number, picture_file
from .graph import add_page_flags

MODELS = (("pre-norm  x + F(LN(x))", True), ("post-norm  LN(x + F(x))", False))


def add_parser(subparsers):
    p = subparsers.add_parser(
        "gradflow", help="chart the gradient along the residual stream, pre- vs post-norm",
        description="Build a pre-norm and a post-norm GPT with identical initial weights and "
                    "chart the gradient norm at the input of every block, measured on one "
                    "fixed batch of the built-in corpus: at initialisation, and with --steps N "
                    "also after N AdamW steps (constant learning rate, no warmup) on both.")
    p.add_argument("--output", "-o", metavar="FILE", type=picture_file, required=True,
                   help="picture to write: .png, .svg or .pdf")
    p.add_argument("--n-layer", metavar="N", type=count(1), default=12,
                   help="blocks per model (default: %(default)s)")
    p.add_argument("--n-embd", metavar="D", type=count(1), default=64,
                   help="model width (default: %(default)s)")
    p.add_argument("--n-head", metavar="H", type=count(1), default=2,
                   help="attention heads (default: %(default)s)")
    p.add_argument("--block-size", metavar="T", type=count(1), default=32,
                   help="sequence length (default: %(default)s)")
    p.add_argument("--batch-size", metavar="B", type=count(1), default=8,
                   help="sequences per batch (default: %(default)s)")
    p.add_argument("--steps", metavar="N", type=count(0), default=0,
                   help="also train both models N steps and chart them again, with a "
                        "progress bar per model (default: %(default)s; 300 steps of 12 "
                        "layers: about 2 min of CPU time on a 2-core AMD EPYC, 3.5 min "
                        "wall-clock beside other programs, 12 min on a heavily loaded one)")
    p.add_argument("--learning-rate", metavar="LR", type=number(above=0), default=3e-3,
                   help="constant AdamW learning rate for --steps: the tiny preset's peak "
                        "rate, without its warmup (default: %(default)s)")
    p.add_argument("--seed", metavar="S", type=count(0), default=0,
                   help="random seed for the weights and the batches (default: %(default)s)")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="precision of weights and activations; float64 takes float32's "
                        "rounding out of the numbers (default: %(default)s)")
    add_page_flags(p)
    p.set_defaults(run=run)


def _measure(model, x, y):
    """(‖∂L/∂x_l‖ per block, loss) on batch x, y; leaves no gradient behind."""
    import viz

    _, loss = model(x, y)
    with viz.record_grad_norms():
        loss.backward()
    norms = viz.module_input_grad_norms(loss, [f"blocks.{i}" for i in range(len(model.blocks))])
    model.zero_grad()
    return norms, loss.item()


def stream_gradients(n_layer, n_embd, n_head, block_size, batch_size, steps=0,
                     learning_rate=3e-3, seed=0, dtype="float64", progress=False):
    """{stage: {model label: [‖∂L/∂x_l‖ per block]}} and {stage: {model label: loss}}.

    Stages: "at initialisation", and "after N steps" when steps > 0. Training is AdamW
    (as `microtensor train`: weight decay 0.1 on matrices, betas 0.9/0.99, gradient
    clipping at 1) at a constant learning rate: no warmup, the remedy post-norm needs.
    The weights are initialised in float32 as `train` does, then cast to `dtype`; matrix
    products run on one BLAS thread. progress=True shows a tqdm bar on stderr per model
    while it trains.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _stream_gradients(n_layer, n_embd, n_head, block_size, batch_size, steps,
                                 learning_rate, seed, dtype, progress)


def _stream_gradients(n_layer, n_embd, n_head, block_size, batch_size, steps, learning_rate,
                      seed, dtype, progress):
    import numpy as np
    from tqdm import tqdm

    import microtensor
    import nn
    from models import GPT, CharTokenizer
    from models.training.data import default_corpus, get_batch
    from models.training.run import configure_optimizer
    from models.training.settings import TrainConfig

    text = default_corpus()
    tokenizer = CharTokenizer.from_text(text)
    ids = np.array(tokenizer.encode(text), dtype=np.int64)
    microtensor.manual_seed(seed + 1)
    x, y = get_batch(ids, batch_size, block_size)       # the fixed measuring batch
    after = f"after {steps} AdamW steps (lr {learning_rate:g}, no warmup)"
    norms, losses = {}, {}
    for label, norm_first in MODELS:
        microtensor.manual_seed(seed)  # identical initial weights and batches for both
        shape = TrainConfig(n_layer=n_layer, n_head=n_head, n_embd=n_embd,
                            block_size=block_size, bias=False, norm_first=norm_first)
        model = GPT(shape.model_config(tokenizer.vocab_size))
        for param in model.parameters():
            param.data = param.data.astype(dtype)  # rebinds: a fresh array of the dtype
        stage = "at initialisation"
        norms.setdefault(stage, {})[label], losses.setdefault(stage, {})[label] = \
            _measure(model, x, y)
        if steps:
            config = TrainConfig(learning_rate=learning_rate)  # AdamW settings of `train`
            optimizer = configure_optimizer(model, config)
            for _ in tqdm(range(steps), desc=label.split()[0], unit="step",
                          disable=not progress, dynamic_ncols=True):
                _, loss = model(*get_batch(ids, batch_size, block_size))
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
                optimizer.step()
            norms.setdefault(after, {})[label], losses.setdefault(after, {})[label] = \
                _measure(model, x, y)
    return norms, losses


def run(args):
    import numpy as np

    import viz
    from viz.save import picture_format

    picture_format(args.output)
    if args.n_embd % args.n_head:
        raise ValueError(f"--n-embd {args.n_embd} is not divisible by --n-head {args.n_head}")
    norms, losses = stream_gradients(args.n_layer, args.n_embd, args.n_head, args.block_size,
                                     args.batch_size, args.steps, args.learning_rate, args.seed,
                                     args.dtype, progress=True)
    panels = {stage: {f"{label}, loss {losses[stage][label]:.2f}": series
                      for label, series in lines.items()} for stage, lines in norms.items()}
    title = (f"‖∂L/∂x_l‖ at each block's input of a {args.n_layer}-layer GPT (D={args.n_embd}), "
             "same initial weights, measured on one fixed batch")
    viz.save_figure(viz.gradient_flow(panels, title=title), args.output, dpi=args.dpi,
                    size=args.size)
    print(f"measured: ‖∂L/∂x_l‖, the norm of the whole gradient reaching the input x_l of block "
          f"l, after one backward() of the mean cross-entropy L on one fixed batch of "
          f"{args.batch_size} x {args.block_size} characters of the built-in corpus; "
          f"{args.n_layer} layers, D={args.n_embd}, {args.n_head} heads, no biases, seed "
          f"{args.seed}, {args.dtype}, one BLAS thread, numpy {np.__version__}")
    for stage, lines in norms.items():
        print(f"{stage}:")
        print("  block  " + "  ".join(f"{label.split()[0]:>10}" for label in lines))
        for i in range(args.n_layer):
            print(f"  {i:5d}  " + "  ".join(f"{series[i]:10.3e}" for series in lines.values()))
        print("   loss  " + "  ".join(f"{losses[stage][label]:10.4f}" for label in lines))
    print(f"wrote {args.output}")
    return 0
