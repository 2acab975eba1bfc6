"""The route of `microtensor train`: every function of models/ (the workshop) that a short run
of the tiny preset calls from the train command's run(args) on (parsing left out), in the order
first called, and the models/ frames under the first loss.backward().

    python benchmarks/route_of_train.py TREE OUT_DIR     # TREE: a checkout's root

stops = distinct functions (class and module bodies left out), files = distinct files,
entries = times the route (the sequence of first calls) moves into a file from another one.
"""
import collections
import os
import sys

root = os.path.abspath(sys.argv[1])
sys.path.insert(0, root)
models = os.path.join(root, "models") + os.sep
seen, order = set(), []
started = []  # recording starts when the train command's run(args) is entered (after parsing)


backward_stack = []
SKIPPED = ("<module>", "<genexpr>", "<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>")


def tracer(frame, event, arg):
    if event == "call":
        code = frame.f_code
        if code.co_name == "backward" and not backward_stack and "microtensor" in code.co_filename:
            f = frame.f_back
            while f is not None:
                if f.f_code.co_filename.startswith(models):
                    backward_stack.append(f"{os.path.relpath(f.f_code.co_filename, root)}:"
                                          f"{f.f_code.co_qualname}:{f.f_lineno}")
                f = f.f_back
        if (code.co_flags & 1 and code.co_filename.startswith(models)  # 1: CO_OPTIMIZED
                and code.co_name not in SKIPPED):
            key = (os.path.relpath(code.co_filename, root), code.co_qualname)
            if not started:
                if key != ("models/cli/train.py", "run"):
                    return None
                started.append(True)
            if key not in seen:
                seen.add(key)
                order.append(key)
    return None


from models.cli.main import main  # noqa: E402

sys.setprofile(tracer)
status = main(["train", "--preset", "tiny", "--out", sys.argv[2], "--quiet", "--max-iters", "2",
               "--eval-interval", "1", "--eval-iters", "1", "--overwrite"])
sys.setprofile(None)
assert status == 0, status
files = [f for f, _ in order]
entries = collections.Counter(f for i, f in enumerate(files) if i == 0 or files[i - 1] != f)
for f, q in order:
    print(f"{f}:{q}")
print(f"stops {len(order)} in {len(set(files))} files; entries per file:",
      dict(entries.most_common()))
print("loss.backward() called from (innermost first):", " <- ".join(backward_stack))
