"""The primitive ops, one family per file, each a `Function` with forward and backward side by side.

Ops see numpy arrays only: `Tensor` (tensor.py) turns scalars, masks and indices into
arrays and runs an op through `apply`; nothing here imports tensor.py. Read arithmetic.py
first, then matmul.py, then the rest in any order (notes 3.8 for the derivatives).
"""
