"""The exercises, in the order of the course (chapter 3, then training): number, the notes'
section, the student's file and functions, and the grader module.

The formula, shapes and hint of each one live in its stub (models/exercises/stubs/), the
file the student edits; its checks and mistakes in its grader (models/exercises/graders/).
`pieces` names where the reading path (README.md's table, READING_PATH below) holds the same
code: the workspace's read-only copy under reading/ has each of them replaced by a stub.
"""
import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    number: int
    slug: str          # the stub's and grader's module name: ex03_softmax_backward
    title: str
    section: str       # the notes' section(s)
    functions: tuple   # what the student writes
    pieces: tuple = () # where the reading path holds it: (file, qualified name), stubbed
    formula: str = ""  # the formula, in the notes' symbols, beside the stub in reading/
    engine: bool = False  # the student may use microtensor's and nn's public names (Tensors)
    refused: tuple = ()   # the piece itself and what is built on it, by public dotted name:
    #                       fenced where it lives in the student's process (guard.poison)
    fenced_ops: tuple = ()  # classes of the engine that compute the piece, by class name
    #                       (found among object's subclasses at run time, wherever they live)
    calls_param: tuple = None  # unused: the block's forward is fenced as an object

    @property
    def filename(self):
        """The student's file, under the workspace's exercises/ folder."""
        return f"{self.slug}.py"

    @property
    def grader_filename(self):
        """The pytest file, under the workspace's graders/ folder."""
        return f"test_{self.slug}.py"

    @property
    def source(self):
        """Where the exercise comes from, as printed: "notes 3.2, 3.8", or "training, after
        the notes' chapter 3" for the one that no section of the notes covers."""
        if self.section[:1].isdigit():
            return f"notes {self.section}"
        return f"{self.section}, after the notes' chapter 3"

    def grader(self):
        return importlib.import_module(f"models.exercises.graders.{self.slug}")

    def stub_source(self):
        from importlib import resources

        return resources.files("models.exercises.stubs").joinpath(self.filename).read_text(
            encoding="utf-8")


EXERCISES = (
    Exercise(1, "ex01_unbroadcast", "un-broadcasting a gradient", "3.6, 3.8",
             ("unbroadcast",),
             (("microtensor/autograd.py", "unbroadcast"),),
             "grad summed over the axes broadcasting added or stretched"),
    Exercise(2, "ex02_matmul_backward", "matmul backward (AᵀG, GVᵀ)", "3.8",
             ("matmul_backward",),
             (("microtensor/ops/matmul.py", "MatMul.backward"),),
             "Z = AV: ∂L/∂A = G Vᵀ, ∂L/∂V = Aᵀ G"),
    Exercise(3, "ex03_softmax_backward", "softmax backward", "3.2, 3.8",
             ("softmax_backward",),
             (("microtensor/ops/softmax.py", "Softmax.backward"),),
             "ds = a ⊙ (da − Σ a⊙da)"),
    Exercise(4, "ex04_layer_norm_backward", "layer norm backward", "3.6",
             ("layer_norm_backward",),
             (("microtensor/ops/layer_norm.py", "LayerNorm.backward"),),
             "∂L/∂x = r · (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂)), ĝ = g ⊙ w"),
    Exercise(5, "ex05_cross_entropy_backward", "cross-entropy backward", "3.7, 3.3",
             ("cross_entropy_backward",),
             (("microtensor/ops/loss.py", "CrossEntropy.backward"),),
             "∂L/∂z = (softmax(z) − onehot(y)) / N"),
    Exercise(6, "ex06_masked_fill", "masked fill, forward and backward", "3.3, 3.8",
             ("masked_fill", "masked_fill_backward"),
             (("microtensor/ops/masking.py", "MaskedFill.forward"),
              ("microtensor/ops/masking.py", "MaskedFill.backward")),
             "y = where(M, value, x); ∂L/∂x = where(M, 0, g)"),
    Exercise(7, "ex07_attention", "scaled dot-product attention forward", "3.1–3.4",
             ("scaled_dot_product_attention",),
             (("nn/attention.py", "scaled_dot_product_attention"),),
             "softmax(QKᵀ/√d_k + M) V", engine=True,
             refused=("nn.scaled_dot_product_attention", "nn.MultiHeadAttention",
                      "nn.tiled_attention", "nn.TransformerBlock", "nn.TransformerEncoderLayer",
                      "nn.TransformerDecoderLayer"),
             fenced_ops=("TiledAttention",)),
    Exercise(8, "ex08_heads", "multi-head split and merge", "3.5",
             ("split_heads", "merge_heads"),
             (("nn/attention.py", "MultiHeadAttention._split_heads"),
              ("nn/attention.py", "MultiHeadAttention._merge_heads")),
             "[B, T, D] -> [B, H, T, d] and back, D = H·d", engine=True,
             refused=("nn.MultiHeadAttention", "nn.TransformerBlock",
                      "nn.TransformerEncoderLayer", "nn.TransformerDecoderLayer")),
    Exercise(9, "ex09_pre_norm_block", "the pre-norm block", "3.6", ("pre_norm_block",),
             (("nn/block.py", "TransformerBlock.forward"),),
             "x = x + Attn(LN(x)); x = x + FFN(LN(x))", engine=True,
             refused=("nn.TransformerBlock.forward", "nn.sublayer", "nn.TransformerEncoderLayer",
                      "nn.TransformerDecoderLayer")),
    Exercise(10, "ex10_kv_cache", "decoding with a KV cache", "3.7", ("attend_with_cache",),
             (("nn/kv_cache.py", "KVCache.append"),),
             "K ← [K; k_t], V ← [V; v_t]; attend with q_t to all of K, V", engine=True,
             refused=("nn.KVCache", "nn.MultiHeadAttention", "nn.TransformerBlock",
                      "nn.TransformerEncoderLayer", "nn.TransformerDecoderLayer"),
             fenced_ops=("DoublingBuffers", "TiledAttention")),
    Exercise(11, "ex11_adamw", "AdamW's step", "training", ("adamw_step",),
             (("nn/optim/adamw.py", "AdamW.step"),),
             "p ← p − lr·λ·p; p ← p − lr · (m/(1 − β₁ᵗ)) / (√(v/(1 − β₂ᵗ)) + ε)"),
    Exercise(12, "ex12_backward", "the engine's backward(): topological order", "3.8",
             ("topological_order", "backward"),
             (("microtensor/autograd.py", "topological_order"),
              ("microtensor/autograd.py", "backward")),
             "visit in reverse topological order; grad[input] += local · grad[node]"),
    Exercise(13, "ex13_bpe_merge", "one merge step of byte-pair encoding", "tokenizer",
             ("count_pairs", "most_frequent_pair", "merge"), (),
             "count adjacent pairs; the top pair, ties to the smallest; replace left to right"),
)

# README.md's "The reading path", in its order, with the files the exercises' pieces live in
# (nn/kv_cache.py): what the workspace copies under reading/.
READING_PATH = (
    "microtensor/autograd.py", "microtensor/tensor.py",
    "microtensor/ops/arithmetic.py", "microtensor/ops/matmul.py",
    "microtensor/ops/reduction.py", "microtensor/ops/shape.py",
    "microtensor/ops/pointwise.py", "microtensor/ops/softmax.py", "microtensor/ops/masking.py",
    "microtensor/ops/layer_norm.py", "microtensor/ops/embedding.py", "microtensor/ops/loss.py",
    "microtensor/ops/dropout.py",
    "nn/module.py", "nn/layers.py", "nn/attention.py", "nn/feedforward.py", "nn/block.py",
    "models/gpt.py", "nn/optim/adamw.py", "models/training/train.py",
    "nn/transformer.py", "models/seq2seq.py",
    "nn/kv_cache.py",
)


def exercise(number):
    """The Exercise numbered `number`; ValueError naming the valid range otherwise."""
    for ex in EXERCISES:
        if ex.number == number:
            return ex
    raise ValueError(f"exercise number must be 1 to {len(EXERCISES)}; got {number}")
