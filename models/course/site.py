"""`microtensor course --output DIR`: the course as a static folder that runs in a browser tab with
nothing installed (Pyodide: CPython and numpy compiled to WebAssembly; issue 34).

The folder holds index.html (the cells of models/course/cells.py, the tiny GPT, the exercises),
its scripts and style (models/course/static/), and microtensor.zip: the four packages as they
are installed here (their files, found through the import system), which the page unpacks into
Pyodide's file system. Pyodide itself comes from its official CDN by default, from another URL,
or from a local folder that `course --fetch-pyodide` filled, copied into DIR/pyodide/ (an
offline classroom, the tests).
"""
import importlib.util
import json
import os
import tempfile
import zipfile
from pathlib import Path

from . import fetch
from .cells import SECTIONS
from .runtime import TINY_TEXT

PACKAGES = ("microtensor", "nn", "models", "viz")
STATIC = Path(__file__).with_name("static")
STATIC_FILES = ("course.js", "boot.js", "worker.js", "course.css")
MARK = ".microtensor-course"  # in a folder this command wrote: its files may be replaced
PYPI_WHEELS = ["graphviz==0.20.3", "tqdm==4.67.1"]  # what micropip installs from a CDN build


def package_zip():
    """The bytes of a zip of the installed packages' files (no __pycache__), paths from the
    packages' own folders: microtensor/..., nn/..., models/..., viz/..."""
    buffer = tempfile.SpooledTemporaryFile()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name in PACKAGES:
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.submodule_search_locations:
                raise RuntimeError(f"package {name!r} is not importable here; install microtensor")
            root = Path(list(spec.submodule_search_locations)[0])
            for path in sorted(root.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts \
                        and path.suffix not in (".pyc", ".pyo"):
                    z.write(path, f"{name}/{path.relative_to(root).as_posix()}")
    buffer.seek(0)
    return buffer.read()


def _is_url(text):
    return text.startswith(("http://", "https://", "//"))


def check_output(folder):
    """Make `folder`, or accept an empty one or one this command wrote (MARK); ValueError for
    a folder with other files, which are never overwritten."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--output {folder}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MARK).exists():
        raise ValueError(f"--output {folder}: a folder with files that `microtensor course` did "
                         f"not write; give an empty or new folder")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARK).write_text("written by `microtensor course --output`\n", encoding="utf-8")


def _write(path, data):
    """Atomic write of bytes (a temporary file in the same folder, then os.replace)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def local_pyodide(source, folder):
    """Copy a `course --fetch-pyodide` folder into folder/pyodide/; returns the wheel names.
    ValueError naming the first file that is missing."""
    source = Path(source)
    names = fetch.CORE_FILES + [w for w, _ in fetch.WHEELS]
    lock = json.loads((source / "pyodide-lock.json").read_text(encoding="utf-8")) \
        if (source / "pyodide-lock.json").exists() else None
    if lock is not None:
        names.append(lock["packages"][fetch.NUMPY]["file_name"])
    for name in names:
        if not (source / name).is_file():
            raise ValueError(f"--pyodide {source}: {name} is missing; fill the folder with "
                             f"`microtensor course --fetch-pyodide {source}`")
    target = Path(folder) / "pyodide"
    target.mkdir(exist_ok=True)
    for name in names:
        _write(target / name, (source / name).read_bytes())
    return [w for w, _ in fetch.WHEELS]


def build(output, pyodide=None):
    """Write the site into `output`; `pyodide` is None (Pyodide's CDN), a URL, or a local
    folder from `course --fetch-pyodide`. Returns the path of index.html."""
    check_output(output)
    if pyodide is None or _is_url(pyodide):
        index_url = (pyodide or fetch.PYODIDE_CDN).rstrip("/") + "/"
        config = {"indexURL": index_url, "vizjs": fetch.VIZJS_CDN, "wheels": None,
                  "pypi": PYPI_WHEELS}
    else:
        if not Path(pyodide).is_dir():
            raise ValueError(f"--pyodide {pyodide}: neither a URL nor a folder")
        wheels = local_pyodide(pyodide, output)
        config = {"indexURL": "pyodide/", "vizjs": "pyodide/viz-global.js",
                  "wheels": [f"pyodide/{w}" for w in wheels], "pypi": None}
    config.update(packages="microtensor.zip", sections=SECTIONS, tinyText=TINY_TEXT,
                  pyodideVersion=fetch.PYODIDE_VERSION)
    _write(Path(output) / "microtensor.zip", package_zip())
    for name in STATIC_FILES:
        _write(Path(output) / name, (STATIC / name).read_bytes())
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    # JSON inside <script>: "</" would end the element; \u003c reads the same in JSON
    text = json.dumps(config, ensure_ascii=False).replace("<", "\\u003c")
    page = page.replace("{{CONFIG}}", text)
    page = page.replace("{{VIZJS}}", config["vizjs"])
    _write(Path(output) / "index.html", page.encode("utf-8"))
    return str(Path(output) / "index.html")
