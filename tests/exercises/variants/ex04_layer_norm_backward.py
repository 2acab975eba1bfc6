"""Exercise 4, another right answer: sums instead of means, (1/D)·r·(D·ĝ − Σĝ − x̂·Σ ĝx̂)."""

def layer_norm_backward(g, xhat, rstd, weight):
    d = g.shape[-1]
    gh = g * weight
    sums = gh.sum(-1, keepdims=True), (gh * xhat).sum(-1, keepdims=True)
    dx = rstd / d * (d * gh - sums[0] - xhat * sums[1])
    rows_g, rows_gx = g.reshape(-1, d), (g * xhat).reshape(-1, d)
    return dx, rows_gx.sum(axis=0), rows_g.sum(axis=0)
