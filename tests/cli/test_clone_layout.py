"""The clone works from anywhere: a script run from the folder that contains the clone (named
`microtensor`, as the README's `git clone ... microtensor` names it) imports the installed
package, not the clone's folder as an empty namespace package."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = """\
import microtensor
microtensor.manual_seed(0)
print(microtensor.__file__)
"""


def test_a_script_beside_the_clone_named_microtensor_imports_the_package(tmp_path):
    (tmp_path / "microtensor").symlink_to(ROOT, target_is_directory=True)  # the clone
    (tmp_path / "my_script.py").write_text(SCRIPT, encoding="utf-8")
    run = subprocess.run([sys.executable, "my_script.py"], cwd=tmp_path, capture_output=True,
                         text=True, env=dict(os.environ), timeout=120)
    assert run.returncode == 0, (
        f"expected the package to import from beside the clone; got exit {run.returncode}:\n"
        f"{run.stderr[-2000:]}")
    imported = pathlib.Path(run.stdout.strip()).resolve()
    assert imported == (ROOT / "microtensor" / "__init__.py").resolve(), (
        f"expected {ROOT / 'microtensor' / '__init__.py'}, imported {imported}")
