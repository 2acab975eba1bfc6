"""What each box of a graph picture says and how it is filled: op and shape, the attention
steps of notes 3.1–3.5 with their symbolic shapes, folded modules with a bar per block.

Attention steps and residual adds are found by the role the code that computes them gives
their graph node (`grad_fn.role`), never by tensor names.
"""
from html import escape

from .fold import FoldedNode
from .style import FILL, fmt_norm, fmt_number, fmt_shape, mix
from .views import module_units

# The roles nn.scaled_dot_product_attention gives its steps -> (title, symbolic shape).
# "T_k" / "T_q" become plain "T" in self-attention, where the score matrix is square.
ATTENTION_STEPS = {
    "QKᵀ": ("QKᵀ", "[B,H,T_q,T_k]"),
    "S": ("S = QKᵀ/√d_k", "[B,H,T_q,T_k]"),
    "S + M": ("S + M  (additive mask)", "[B,H,T_q,T_k]"),
    "S (masked)": ("mask: S → −∞ where blocked", "[B,H,T_q,T_k]"),
    "A": ("A = softmax(S)  (rows over keys)", "[B,H,T_q,T_k]"),
    "Z": ("Z = AV", "[B,H,T_q,d_v]"),
    # the whole of attention as one op (nn/tiled_attention.py): no S or A is ever kept
    "Z (tiled)": ("Z = softmax(QKᵀ/√d_k + M) V\ntiled, online softmax: O(T) kept", "[B,H,T_q,d_v]"),
}


def _fmt_const(op, c, attention=False):
    """A scalar folded into an arithmetic op; in attention's scaling step 0.1768 reads ×1/√32
    (the 1/√d_k); pow's exponent reads ^p. Other ops' scalars (LayerNorm's default weight 1 and
    bias 0) are not shown."""
    if op == "pow":
        return f" ^{c:.4g}"
    if op not in ("add", "sub", "mul", "div"):
        return ""
    if op != "mul":
        return f" {c:.4g}"
    if attention and c > 0:
        n = 1.0 / (c * c)
        if n >= 2 and abs(n - round(n)) < 1e-3 * n:
            return f" ×1/√{round(n)}"
    return f" ×{c:.4g}"


def attention_shapes(nodes, edges):
    """{node key: symbolic shape} for the S, A, Z steps, with T_q = T_k written as T when the scores
    are square."""
    square = {key for key, n in nodes.items()
              if n.kind == "op" and n.role in ATTENTION_STEPS and not n.role.startswith("Z")
              and len(n.shape) >= 2 and n.shape[-1] == n.shape[-2]}
    a_of_z = {e.dst: e.src for e in edges if e.slot == 0}  # Z = A V: A is input 0
    shapes = {}
    for key, n in nodes.items():
        if n.kind != "op" or n.role not in ATTENTION_STEPS:
            continue
        symbolic = ATTENTION_STEPS[n.role][1]
        is_square = a_of_z.get(key) in square if n.role == "Z" else key in square
        if is_square:
            symbolic = symbolic.replace("T_q", "T").replace("T_k", "T")
        shapes[key] = symbolic
    return shapes


def _short_name(node, where):
    """A name as it reads inside the cluster `where`: a parameter keeps its module's last unit
    ("blocks.0.attn.q_proj.weight" -> "q_proj.weight"), a folded module drops the path of
    the cluster around it ("blocks.0.ln_1" in blocks.0 -> "ln_1")."""
    if node.kind == "param" and "." in node.name:
        module, attr = node.name.rsplit(".", 1)
        return f"{module_units(module)[-1]}.{attr}"
    if node.kind == "module" and where and node.name.startswith(where + "."):
        return node.name[len(where) + 1:]
    return node.name


def _label(node, symbolic=None, where=""):
    shape = fmt_shape(node.shape)
    attention = node.kind == "op" and node.role in ATTENTION_STEPS
    consts = "".join(_fmt_const(node.op, c, attention) for c in node.consts)
    if attention:
        title = ATTENTION_STEPS[node.role][0]
        lines = [title, node.op + consts, f"{symbolic or ATTENTION_STEPS[node.role][1]} = {shape}"]
    elif node.kind == "op":
        lines = [node.op + consts + (f"  ({node.role})" if node.role else "") + " " + shape]
    elif node.kind == "module":
        name = _short_name(node, where)
        lines = [name, node.op, shape] if node.op else [name, shape]
    else:
        lines = [(_short_name(node, where) or node.kind) + " " + shape]
    norm = fmt_norm(node.grad_norm)
    return "\n".join(lines + ([norm] if norm else []))


def _folded_label(node, scale, where=""):
    """An HTML-like label: the run's name and class, then one bar per block, as tall as that
    block's ‖∂L/∂output‖ relative to the largest of the run and coloured as an edge carrying it."""
    name = node.name[len(where) + 1:] if where and node.name.startswith(where + ".") else node.name
    count = len(node.members)
    rows = [f"<tr><td><b>{escape(name)} · {escape(node.op)} ×{count}</b></td></tr>",
            f"<tr><td>{fmt_shape(node.shape)}</td></tr>"]
    norms = [n for _, n in node.members]
    if all(n is not None for n in norms):
        top = max(norms) or 1.0
        bars, numbers = [], []
        first = int(node.members[0][0].rpartition(".")[2])
        for i, n in enumerate(norms):
            t = scale.position(n)
            colour = mix(t) if t is not None else "#9e9e9e"
            bars.append(f'<td valign="bottom" fixedsize="true" width="16" height="26">'
                        f'<table border="0" cellspacing="0" cellpadding="0"><tr>'
                        f'<td bgcolor="{colour}" fixedsize="true" width="12" '
                        f'height="{max(1, round(24 * n / top))}"></td></tr></table></td>')
            numbers.append(f'<td><font point-size="9">{first + i}</font></td>')
        rows += [f'<tr><td><table border="0" cellspacing="1" cellpadding="0"><tr>{"".join(bars)}'
                 f'</tr><tr>{"".join(numbers)}</tr></table></td></tr>',
                 f"<tr><td>‖g‖ per block: {fmt_number(min(norms))} … {fmt_number(max(norms))}"
                 "</td></tr>"]
    return '<<table border="0" cellborder="0" cellspacing="1">' + "".join(rows) + "</table>>"


def fill_kind(node):
    """The colour class of a node: its kind, with attention steps and residual adds apart."""
    if node.kind == "op" and node.role in ATTENTION_STEPS:
        return "attention"
    if node.kind == "op" and node.role == "residual":
        return "residual"
    return node.kind


def node_attrs(node, show_saved, symbolic=None, where="", scale=None):
    kind = fill_kind(node)
    attrs = {"label": _label(node, symbolic, where), "fillcolor": FILL[kind],
             "style": "filled,rounded", "shape": "box"}
    if kind in ("param", "input", "const"):
        attrs.update(shape="ellipse", style="filled")
    elif kind == "external":
        attrs.update(style="dashed,rounded")
    elif kind == "module":
        attrs.update(shape="box3d", style="filled")
        if isinstance(node, FoldedNode):
            attrs["label"] = _folded_label(node, scale, where)
    elif kind == "residual":
        attrs.update(shape="box", style="filled,bold")
    if node.kind == "op":
        tip = [f"module: {node.module or '(top level)'}"]
    else:
        tip = [node.name] if node.name else []
    if node.saved:
        saved = ", ".join(f"{k}{fmt_shape(v)}" for k, v in node.saved.items())
        tip.append("saved for backward: " + saved)
        if show_saved:
            attrs["label"] += "\nsaved: " + saved
    if tip:
        attrs["tooltip"] = "\n".join(tip)
    return attrs
