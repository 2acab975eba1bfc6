"""What the course page runs inside Pyodide, and the tests run in CPython: a cell with its printed
text, graphs and attention maps; the tiny GPT's training run; an exercise's checks (issue 34).

Everything here uses the packages' public names (microtensor, nn, models, viz,
models.exercises.EXERCISES), so the page follows the code wherever its files move.
"""
import contextlib
import io
import re
import traceback

import numpy as np

# the text a tiny GPT learns in the tab: short, so that 100 steps show the loss falling
TINY_TEXT = ("Attention lets each position look at every earlier position: a query meets "
             "the keys, softmax turns the scores into weights, and the weights mix the values. "
             "The residual stream carries what each layer adds. ") * 8
TINY_CONFIG = dict(block_size=32, n_layer=2, n_head=2, n_embd=64)
TINY_BATCH = 4
NUMPY_PRINT_DEFAULTS = dict(precision=8, threshold=1000, edgeitems=3, linewidth=75,
                            suppress=False, nanstr="nan", infstr="inf", sign="-",
                            floatmode="maxprec", legacy=False)


def run_cell(code, namespace):
    """Run `code` (Python source) in `namespace` (a dict, kept between runs of one cell).

    Returns {"text": stdout then stderr (a traceback goes to stderr), "ok": bool,
    "graphs": [DOT source], "heatmaps": [{"weights": [[...]], "labels", "title"}]}: the cell
    asks for pictures with show_graph(tensor, **draw_graph options) and
    show_attention(weights [T_q, T_k] or [H, T_q, T_k], labels, title), put in its namespace.
    """
    pictures = {"graphs": [], "heatmaps": []}

    def show_graph(tensor, **options):
        import viz

        pictures["graphs"].append(viz.draw_graph(tensor, **options).source)

    def show_attention(weights, labels=None, title=""):
        pictures["heatmaps"].append(attention_picture(weights, labels, title))

    namespace.update(show_graph=show_graph, show_attention=show_attention)
    out, err = io.StringIO(), io.StringIO()
    ok = True
    # numpy's default print options for every run, and a cell's own set_printoptions undone
    # after it: what a cell prints does not depend on which cell ran before
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            np.printoptions(**NUMPY_PRINT_DEFAULTS):
        try:
            exec(compile(code, "<cell>", "exec"), namespace)
        except BaseException as e:  # the student's error, shown as Python prints it
            ok = False
            traceback.print_exception(type(e), e, e.__traceback__.tb_next)  # from the cell on
    return {"text": out.getvalue() + err.getvalue(), "ok": ok, **pictures}


def attention_picture(weights, labels=None, title=""):
    """What the page draws for show_attention: {"weights": [H][T_q][T_k], "labels": T_k
    strings, "title"}. Labels follow the data: `labels` of another length than T_k are
    replaced by the indices 0..T_k-1, and the title says so; the title ends with the shape."""
    w = np.asarray(getattr(weights, "data", weights), dtype=np.float64)
    while w.ndim < 3:
        w = w[None]
    w = w.reshape(-1, *w.shape[-2:])
    heads, t_q, t_k = w.shape
    title = title or "attention weights (rows: queries, columns: keys)"
    given = list(labels) if labels is not None else None
    if given is not None and len(given) != t_k:
        title += (f" (labels: {len(given)} given for {t_k} keys, so indices 0..{t_k - 1} "
                  f"are shown)")
        given = None
    names = [str(j) for j in range(t_k)] if given is None else [str(c) for c in given]
    shape = f"[{t_q}, {t_k}]" if heads == 1 else f"{heads} heads × [{t_q}, {t_k}]"
    return {"weights": np.nan_to_num(w).round(4).tolist(), "labels": names,
            "title": f"{title} · {shape}"}


def tiny_gpt(seed=0):
    """(model, tokenizer, data ids) of the tab's tiny GPT: 2 layers, 64 wide, 32 characters."""
    import microtensor as mt
    from models import GPT, CharTokenizer, GPTConfig

    tok = CharTokenizer.from_text(TINY_TEXT)
    mt.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, **TINY_CONFIG))
    # int64 said outright: numpy's default integer is int32 in WebAssembly (a C long)
    return model, tok, np.array(tok.encode(TINY_TEXT), dtype=np.int64)


def train_tiny_gpt(steps, seed=0, lr=3e-3, on_step=None):
    """Train the tiny GPT for `steps` AdamW steps on batches [4, 32] drawn with `seed`.

    Returns (model, tokenizer, losses: list of float, one per step, before its update).
    on_step(step, loss) is called after each step (the page's worker posts it to the curve).
    """
    import nn

    model, tok, data = tiny_gpt(seed)
    opt = nn.optim.AdamW(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    block, losses = TINY_CONFIG["block_size"], []
    model.train()
    for step in range(steps):
        starts = rng.integers(0, len(data) - block - 1, TINY_BATCH)
        batch = np.stack([data[s:s + block + 1] for s in starts])
        _, loss = model(batch[:, :-1], batch[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        if on_step is not None:
            on_step(step, losses[-1])
    model.eval()
    return model, tok, losses


def sample_tiny_gpt(model, tok, prompt="The ", length=80, seed=0):
    """`length` characters sampled after `prompt` (temperature 0.8, top-k 8, `seed`)."""
    import microtensor as mt

    mt.manual_seed(seed)
    start = np.array([tok.encode(prompt)], dtype=np.int64)
    ids = model.generate(start, length, temperature=0.8, top_k=8)
    return tok.decode(ids[0])


def use_vizjs(render_svg):
    """Lay graphs out with viz.js where Graphviz's `dot` program cannot run (a browser tab):
    `graph.pipe(format="svg")`, and so viz.explore and viz.save(..., ".svg"), call
    render_svg(dot source: str) -> SVG text instead. It replaces the subprocess call of the
    `graphviz` package (pinned to 0.20.3 in the page, models/course/fetch.py); other formats
    than SVG still raise graphviz.ExecutableNotFound."""
    import subprocess

    from graphviz.backend import execute

    def run_check(cmd, *, input=None, input_lines=None, **kwargs):  # noqa: A002 (its name)
        formats = [c[2:] for c in map(str, cmd) if c.startswith("-T")]
        if formats != ["svg"] or (input is None and input_lines is None):
            raise execute.ExecutableNotFound(cmd)
        parts = [input] if input is not None else list(input_lines)
        source = "".join(p.decode("utf-8") if isinstance(p, bytes) else p for p in parts)
        svg = str(render_svg(source))
        return subprocess.CompletedProcess(cmd, 0, svg.encode("utf-8"), b"")

    execute.run_check = run_check


def explore_tiny_gpt(model, tok, path, seed=0):
    """One training step of `model` on a batch of the tiny text, written by viz.explore to
    `path` (depth 1: a box per block, which opens on a click). Returns the path."""
    import viz

    block = TINY_CONFIG["block_size"]
    data = np.array(tok.encode(TINY_TEXT), dtype=np.int64)
    starts = np.random.default_rng(seed).integers(0, len(data) - block - 1, 2)
    batch = np.stack([data[s:s + block + 1] for s in starts])
    model.train()
    with viz.record_steps():
        _, loss = model(batch[:, :-1], batch[:, 1:])
        loss.backward()
    model.zero_grad()
    model.eval()
    return viz.explore(loss, path, depth=1, title=f"the tab's tiny GPT: one step, loss "
                                                  f"{loss.item():.3f}")


def exercise_list():
    """[{"number", "title", "section", "stub", "hint", "function"}] of the exercises, in the
    course's order: "stub" is the file without its docstring's Hint paragraph (the page shows
    the hint once, in its Hint box) and naming the editor where it named the file,
    "function" the name of the function to write."""
    from models.exercises import EXERCISES

    out = []
    for e in EXERCISES:
        stub, hint = split_hint(e.stub_source())
        # the tab has no exercises/ folder: the stub's message names the editor instead
        stub = re.sub(r"exercises/ex\d\d_\w+\.py", "the editor", stub)
        out.append({"number": e.number, "title": e.title, "section": e.source, "stub": stub,
                    "hint": hint, "function": _function_to_write(stub)})
    return out


def _function_to_write(source):
    """The name of the function whose body is still `raise NotImplementedError`, or ""."""
    raised = source.find("raise NotImplementedError")
    names = re.findall(r"^def (\w+)\(", source[:max(raised, 0)], re.M)
    return names[-1] if raised >= 0 and names else ""


def split_hint(stub):
    """(stub without its "Hint:" paragraph, that paragraph) of a stub's source."""
    found = re.search(r"^Hint:.*?(?=\n\n|\n\"\"\")", stub, re.M | re.S)
    if not found:
        return stub, ""
    rest = stub[:found.start()] + stub[found.end():].removeprefix("\n\n")
    return rest, " ".join(found.group(0).removeprefix("Hint:").split())


def _students_line(error, source, filename):
    """"line N: <the student's line>" where `error` was raised in the student's file, or ""."""
    number = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else None
    if number is None:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
        number = frames[-1].lineno if frames else None
    lines = source.splitlines()
    if number is None or not 1 <= number <= len(lines):
        return ""
    return f"line {number}: {lines[number - 1].strip()}"


def check_exercise(number, source):
    """Run exercise `number`'s checks on the student's `source` (the edited stub). Practice
    only: a teacher grades with `microtensor exercises grade`.

    Returns {"results": [{"check", "status": "passed"|"failed"|"not started", "message"}],
    "hint": the hint to show once (the matching mistake's, else the grader's; "" when the
    file does not load or every check passed), "text": a report to print, without the hint}.
    """
    import types

    from models.exercises import EXERCISES, ExerciseFailure, NotStarted

    exercise = next(e for e in EXERCISES if e.number == number)
    grader = exercise.grader()
    student = types.ModuleType(exercise.slug)
    results, hints = [], []
    try:
        exec(compile(source, exercise.filename, "exec"), student.__dict__)
    except BaseException as e:  # the student's own line and the error, no frame of ours
        where = _students_line(e, source, exercise.filename)
        error = (f"{type(e).__name__}: {e.msg}" if isinstance(e, SyntaxError)
                 else f"{type(e).__name__}: {e}")
        results.append({"check": "load your code", "status": "failed",
                        "message": f"{where}\n    {error}" if where else error})
    checks = getattr(grader, "CHECKS", []) if not results else []
    for check in checks:
        name = check.__name__.removeprefix("check_").replace("_", " ")
        try:
            check(student)
            results.append({"check": name, "status": "passed", "message": ""})
        except NotStarted as e:
            message = re.sub(r" in exercises/\S+\.py", " in the editor below", str(e))
            results.append({"check": name, "status": "not started", "message": message})
        except (ExerciseFailure, AssertionError) as e:
            message, _, hint = str(e).partition(". Hint: ")
            hints.append(hint.strip())
            results.append({"check": name, "status": "failed", "message": message})
        except Exception as e:  # a check's own crash on odd output: shown, not hidden
            where = _students_line(e, source, exercise.filename)
            results.append({"check": name, "status": "failed",
                            "message": f"{type(e).__name__}: {e}" + (f"\n    at {where}"
                                                                      if where else "")})
    loaded = not (results and results[0]["check"] == "load your code")
    failed = any(r["status"] == "failed" for r in results)
    hint = (next((h for h in hints if h), "") or getattr(grader, "HINT", "")) \
        if loaded and failed else ""
    mark = {"passed": "✓", "failed": "✗", "not started": "·"}
    lines = [f"exercise {number}: {exercise.title} ({exercise.source})"]
    if results and all(r["status"] == "not started" for r in results):
        todo = _function_to_write(source)
        lines.append("Not started yet: in the editor below, replace the line "
                     "`raise NotImplementedError(...)`" + (f" in {todo}" if todo else "")
                     + " with your code, then run the checks again.")
    lines += [f"{mark[r['status']]} {r['check']}: {r['status']}"
              + (f"\n    {r['message']}" if r["message"] and r["status"] == "failed" else "")
              for r in results]
    passed = sum(r["status"] == "passed" for r in results)
    lines.append(f"{passed}/{len(results)} checks passed (practice: your teacher grades with "
                 f"`microtensor exercises grade`)")
    return {"results": results, "hint": hint, "text": "\n".join(lines)}
