"""The four packages import where a browser tab's Pyodide lacks things (matplotlib,
threadpoolctl, regex, Graphviz's `dot`), and a feature that needs one names what to install
(issue 34). Each check runs in a fresh interpreter whose import system refuses those modules."""
import os
import subprocess
import sys
import textwrap

BLOCKER = textwrap.dedent("""
    import sys
    import importlib.abc

    BLOCKED = {"matplotlib", "threadpoolctl", "regex"}

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"No module named {name!r} (blocked by the test)")
            return None

    for name in list(sys.modules):
        if name.split(".")[0] in BLOCKED:
            del sys.modules[name]
    sys.meta_path.insert(0, Refuse())
""")


def run_blocked(code):
    """Run `code` after the blocker, with no `dot` on PATH; returns (exit status, output)."""
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))
    done = subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_engine_nn_models_viz_import_without_matplotlib_threadpoolctl_regex_or_dot():
    status, out = run_blocked("""
        import shutil
        assert shutil.which("dot") is None, "dot is still on PATH"
        import microtensor, nn, models, viz
        import models.training.data_parallel, models.training.train, models.bpe, viz.plots
        x = microtensor.Tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = microtensor.Tensor([5.0, 7.0, 9.0], requires_grad=True)
        y = (x * w).sum()
        y.backward()
        print(x.grad, "digraph" in viz.draw_graph(y).source)
        print(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
    """)
    assert status == 0, f"importing the packages with the blocker failed:\n{out}"
    assert out.splitlines()[-2:] == ["[5. 7. 9.] True", "[]"], f"expected grads, DOT, no " \
                                                               f"blocked module; got:\n{out}"


def test_a_chart_without_matplotlib_names_the_package_to_install():
    status, out = run_blocked("""
        import viz
        try:
            viz.loss_curve([{"iter": 0, "train_loss": 1.0, "val_loss": 1.0}])
        except ImportError as e:
            print("ImportError:", e)
    """)
    assert status == 0 and "ImportError:" in out and "pip install matplotlib" in out, \
        f"expected an ImportError saying `pip install matplotlib`; got:\n{out}"


def test_bpe_without_regex_names_the_package_to_install():
    status, out = run_blocked("""
        from models.bpe import BPETokenizer
        try:
            BPETokenizer.train("hello hello world", vocab_size=260)
        except ImportError as e:
            print("ImportError:", e)
    """)
    assert status == 0 and "ImportError:" in out and "pip install regex" in out, \
        f"expected an ImportError saying `pip install regex`; got:\n{out}"
