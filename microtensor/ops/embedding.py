"""Embedding lookup: row `i` of the weight matrix for each integer id `i` (notes 3.6: the
GPT starts with one; 3.7: the tokens a language model reads).

z[..., :] = W[ids[...], :];   ∂L/∂W[i] = Σ of g over every position whose id is i.
Applied by F.embedding (parity/surface/nn_functional.py), which nn.Embedding calls.
"""
from ..autograd import Function
from .fast import sum_rows_by_id


class Embedding(Function):
    """ids [...] (integers in [0, V)) and weight [V, D] -> [..., D]."""

    op = "embedding"

    def __init__(self, ids):
        self.ids = ids

    def forward(self, weight):
        self.save(ids=self.ids)  # backward reads them here; `saved` is freed after it, so a
        # 2nd backward is refused (retain_graph), as torch's
        return weight[self.ids]

    def backward(self, g):
        return sum_rows_by_id(self.saved["ids"], g, self.input_shapes[0])  # np.add.at(gw, ids, g)
