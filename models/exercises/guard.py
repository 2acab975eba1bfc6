"""What the graders refuse in a student's file, and how: "the piece must be the student's".

Three fences, each with a one-line reason the student reads:
1. Before anything runs, the grader reads the file's syntax tree (`static_check`): imports are
   limited to numpy, math and a few of Python's small helpers (plus microtensor's and nn's
   public names in the exercises built on the engine); the engine's internals (any submodule
   but `microtensor.functional`), the reference answers (`models`), torch, and the exercise's
   own piece (e.g. `nn.scaled_dot_product_attention` in exercise 7, `block(x)` in exercise 9)
   are refused, and so is Python's introspection (`__code__`, frames, `getattr`, `eval`),
   which could reach the grader's code.
2. In the child process (sandbox.py) the file runs with an import fence (the same list, at run
   time), and the exercise's piece, wherever the package keeps it, is replaced by a function
   that refuses: a name put together at run time meets the same answer.
3. Names have aliases (dataclasses.inspect.importlib), so last, in the child, Python's audit
   hook watches acts (`seal`): another file's code run, a file written or a project file read,
   a process started end the child with a refusal.

The engine's layout may change (modules move, merge): nothing here names a module path of its
internals. "Internal" is found by asking the package which submodules it has.

This file imports nothing of the project: the child loads it before anything else.
"""
import ast
import builtins
import importlib.util
import sys

SMALL_HELPERS = ("numpy", "math", "functools", "itertools", "collections", "dataclasses",
                 "typing", "__future__", "operator", "heapq", "bisect", "numbers")
ENGINE = ("microtensor", "microtensor.functional", "nn")
BANNED_BUILTINS = ("eval", "exec", "compile", "__import__", "globals", "locals", "vars",
                   "getattr", "setattr", "delattr", "breakpoint", "open", "input", "memoryview")
# numpy's file readers and writers: np.load(..., allow_pickle=True) runs whatever a pickle
# names (the reference, say), and a file read or written is a channel the grader cannot see
FILE_ATTRIBUTES = ("load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "memmap", "save",
                   "savez", "savez_compressed", "savetxt", "tofile", "DataSource", "npyio",
                   "ctypeslib")
# frames, code objects and module tables: the ways one function reaches another's data
BANNED_ATTRIBUTES = ("f_back", "f_locals", "f_globals", "f_code", "gi_frame", "cr_frame",
                     "tb_frame", "tb_next", "_getframe", "modules", "co_code", "func_globals")


class Refusal(BaseException):
    """The student's code called or imported what its exercise refuses (not an Exception, so
    that a bare `except Exception` in the student's code does not swallow it)."""


def allowed_imports(engine):
    return SMALL_HELPERS + (ENGINE if engine else ())


def _root_allowed(name, engine):
    allowed = allowed_imports(engine)
    return name in allowed or name.split(".")[0] in SMALL_HELPERS


def import_refusal(name, number, engine):
    """The one-line reason `import name` is refused in exercise `number`, or None."""
    if _root_allowed(name, engine):
        return None
    root = name.split(".")[0]
    allowed = "numpy, math" + (" and microtensor's and nn's public names" if engine else "")
    if root == "torch" or root in ("jax", "tensorflow", "scipy", "sklearn", "tokenizers",
                                   "transformers", "tiktoken"):
        why = f"{root} would compute the piece for you"
    elif root == "models":
        why = ("models is the project's own code, with the reference answers "
               "(models.exercises.reference)")
    elif root in ("microtensor", "nn") and engine:
        why = (f"{name} is the engine's inside, where the project's own version of the piece "
               "lives; use the public names (microtensor.Tensor, microtensor.cat, "
               "microtensor.functional, nn.causal_mask, ...)")
    elif root in ("microtensor", "nn"):
        why = ("this exercise is written in numpy: the engine would compute the piece (its own "
               "backward) for you")
    elif root.startswith("ex") and root[2:4].isdigit():
        why = ("each exercise stands alone (its own process): copy the function you need "
               "into this file")
    else:
        why = "it is not needed here and could reach the grader's code"
    return f"exercise {number} may import {allowed} only; your file imports {name}: {why}"


def _submodules(package):
    """The names of `package`'s submodules (its internals), asked of the installed package."""
    import pkgutil

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return set()
    return {m.name for m in pkgutil.iter_modules(spec.submodule_search_locations)}


def static_check(source, filename, number, engine, refused=(), calls_param=None):
    """The first reason to refuse `source` (the student's file) before it runs, or None.

    refused: the exercise's piece and its relatives, as dotted names ("nn.KVCache"): any use of
    their last name is refused. calls_param: (function, index) of an argument the student's
    function must not call or ask for its `forward` (exercise 9's block).
    """
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return None  # the import itself reports it, with its line
    # "nn.KVCache" refuses the name KVCache; "nn.TransformerBlock.forward" (a method) refuses
    # the class's name: `.forward` alone is every module's method
    names = {(r.split(".")[-2] if r.count(".") >= 2 else r.split(".")[-1]): r for r in refused}
    internals = {"microtensor": _submodules("microtensor") - {"functional"},
                 "nn": _submodules("nn")} if engine else {}
    aliases = {}  # local name -> "microtensor" / "nn", from `import microtensor as mt`
    where = f"{filename}, line "
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.level:
                return f"{where}{line}: a relative import (from . import ...) is refused"
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:  # `from microtensor import autograd` imports the submodule autograd
                modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                           if a.name in internals.get(node.module, ())]
            for module in modules:
                refusal = import_refusal(module, number, engine)
                if refusal is None and engine and module.count(".") >= 1:
                    root, sub = module.split(".")[:2]
                    if sub in internals.get(root, ()):
                        refusal = (f"exercise {number} may import microtensor's and nn's public "
                                   f"names only; your file imports {module}: {root}.{sub} is "
                                   "the engine's inside, where the project's own version of "
                                   "the piece lives")
                if refusal:
                    return f"{where}{line}: {refusal}"
            for alias in node.names:
                if alias.name in names:
                    return f"{where}{line}: {_piece(number, names[alias.name])}"
                if isinstance(node, ast.Import) and alias.name in ("microtensor", "nn"):
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            if attr.startswith("__") and attr.endswith("__"):
                return (f"{where}{line}: `.{attr}` reaches into Python's machinery (code "
                        "objects, globals, classes), where the grader's own code is; it is "
                        "refused in an exercise")
            if attr in FILE_ATTRIBUTES:
                return (f"{where}{line}: `.{attr}` reads or writes files (np.load can run "
                        "code a pickle names); an exercise works on the arrays it is given")
            if attr in BANNED_ATTRIBUTES:
                return (f"{where}{line}: `.{attr}` reads another function's frame or the "
                        "table of loaded modules; it is refused in an exercise")
            if attr in names:
                return f"{where}{line}: {_piece(number, names[attr])}"
            base = node.value
            if isinstance(base, ast.Name) and aliases.get(base.id) in internals:
                package = aliases[base.id]
                if attr in internals[package]:
                    return (f"{where}{line}: {package}.{attr} is the engine's inside, where "
                            "the project's own version of the piece lives; use the public "
                            "names (microtensor.Tensor, microtensor.cat, nn.causal_mask, ...)")
        elif isinstance(node, ast.keyword) and node.arg == "allow_pickle":
            return (f"{where}{line}: allow_pickle runs code a file names; it is refused in an "
                    "exercise")
        elif isinstance(node, ast.Name):
            if node.id in BANNED_BUILTINS or node.id in ("__builtins__", "__loader__",
                                                         "__spec__"):
                return (f"{where}{line}: `{node.id}` is refused in an exercise (it can run or "
                        "reach code the file does not show)")
            if node.id in names:
                return f"{where}{line}: {_piece(number, names[node.id])}"
        elif (calls_param and isinstance(node, ast.FunctionDef)
              and node.name == calls_param[0] and len(node.args.args) > calls_param[1]):
            param = node.args.args[calls_param[1]].arg
            for inner in ast.walk(node):
                called = isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                if called and inner.func.id == param:
                    return (f"{where}{inner.lineno}: `{param}(...)` runs the reference "
                            f"TransformerBlock.forward: exercise {number} is that forward; call "
                            f"its parts ({param}.ln_1, {param}.attn, {param}.ln_2, {param}.mlp) "
                            "yourself")
                if (isinstance(inner, ast.Attribute) and inner.attr == "forward"
                        and isinstance(inner.value, ast.Name) and inner.value.id == param):
                    return (f"{where}{inner.lineno}: `{param}.forward` is the reference "
                            f"TransformerBlock.forward: exercise {number} is that forward")
    return None


def _piece(number, dotted):
    return (f"{dotted} is the piece exercise {number} asks you to write (or is built on it): "
            "using it is refused")


# ---- the child's side: the import fence and the poisoned pieces ----

def fenced_builtins(module_name, number, engine, on_refusal):
    """A builtins dict for the student's module: `__import__` refuses what static_check refuses
    (a name put together at run time included); eval, exec, getattr and the rest are absent."""
    real_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {}).get("__name__")
        if importer == module_name:
            full = name
            if level:
                refusal = f"exercise {number}: a relative import is refused"
            else:
                refusal = import_refusal(full, number, engine)
                for item in fromlist or ():
                    sub = f"{full}.{item}"
                    if refusal is None and full in ("microtensor", "nn") and \
                            item in _submodules(full) - {"functional"}:
                        refusal = import_refusal(sub, number, False)
            if refusal:
                on_refusal(refusal)
                raise Refusal(refusal)
        return real_import(name, globals, locals, fromlist, level)

    fenced = {k: v for k, v in vars(builtins).items() if k not in BANNED_BUILTINS}
    fenced["__import__"] = guarded_import
    return fenced


def poison(dotted_names, number, on_refusal):
    """Replace each of `dotted_names` ("nn.scaled_dot_product_attention",
    "nn.TransformerBlock.forward"), wherever its package keeps it (every module of the package
    that holds the same object, every class attribute), by a function that refuses. A name the
    package no longer has is skipped: the static check still refuses it by name."""
    for dotted in dotted_names:
        parts = dotted.split(".")
        try:
            owner = importlib.import_module(parts[0])
            for part in parts[1:-1]:
                owner = vars(owner)[part] if isinstance(owner, type) else getattr(owner, part)
            original = (vars(owner).get(parts[-1]) if isinstance(owner, type)
                        else getattr(owner, parts[-1]))
        except (ImportError, AttributeError, KeyError):
            continue
        if original is None:
            continue
        message = (f"exercise {number}: your code called {dotted}, the piece this exercise asks "
                   "you to write (or one built on it): refused")

        def refuse(*args, _message=message, **kwargs):
            on_refusal(_message)
            raise Refusal(_message)

        if isinstance(owner, type):
            setattr(owner, parts[-1], refuse)
            continue
        for name, module in list(sys.modules.items()):
            if module is None or not (name == parts[0] or name.startswith(parts[0] + ".")):
                continue
            for attr, value in list(vars(module).items()):
                if value is original:
                    setattr(module, attr, refuse)



# ---- the child's last fence: Python's audit hook --------------------------------------------
# The fences above go by name, and names have aliases: allowed modules carry os, importlib and
# builtins as attributes (dataclasses.inspect.importlib). An audit hook sees the act itself,
# whatever name reached it (PEP 578): running another file's code, opening a file, starting a
# process. Once added it cannot be removed from Python, and on a refusal it ends the process at
# once (no `except` can swallow it), after one line the parent reads back (remote.py).

REFUSED_EXIT = 86
OWN_PACKAGES = ("microtensor", "nn", "models", "viz", "_mt_tasks", "_mt_guard")
REFUSED_MARK = "\x1emicrotensor-refused: "
# acts a solution never needs: processes, files changed, sockets, raw memory, the collector's
# object lists, functions made from code objects, pickles, tracing
REFUSED_EVENTS = ("os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn",
                  "os.spawn", "os.kill", "os.killpg", "os.remove", "os.rename", "os.rmdir",
                  "os.mkdir", "os.chmod", "os.chown", "os.link", "os.symlink", "os.truncate",
                  "os.utime", "os.chdir", "os.chflags", "os.putenv", "os.unsetenv",
                  "os.startfile", "subprocess.", "shutil.", "socket.", "ctypes.", "mmap.",
                  "tempfile.", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
                  "sys.settrace", "sys.setprofile", "sys._current_frames",
                  "pickle.", "code.__new__", "function.__new__", "resource.prlimit",
                  "signal.pthread_kill", "builtins.input", "webbrowser.", "urllib.", "http.",
                  "ftplib.", "smtplib.", "imaplib.", "poplib.", "telnetlib.", "nntplib.")


def seal(student_path, project_dirs, trusted_roots, number):
    """From now on, end this process with a refusal when code in it runs another file's code
    (an import or reload of the project, torch, or any module already loaded: the reference
    answers and the exercise's piece are among them), compiles code from a string itself (the
    standard library's helpers, dataclasses and namedtuple, still may), opens any file for
    writing, reads a file of the project (but the student's own) or of /proc, or does one of
    REFUSED_EVENTS. Lazy imports of the standard library and numpy (files under
    `trusted_roots`, not yet loaded) still run.

    Everything the hook calls is bound here, before the student's code runs: a student who
    rebinds os.path or builtins attributes changes nothing the hook uses."""
    import os

    write, exit_now, getcwd, frame = os.write, os._exit, os.getcwd, sys._getframe
    type_of, string, byte_string, to_str = type, str, bytes, os.fsdecode
    get_attr, any_of, starts, split = getattr, any, str.startswith, str.split
    cwd = getcwd()

    def absolute(path):  # normalised with str's own methods (a str subclass is refused first)
        if not starts(path, "/"):
            path = cwd + "/" + path
        parts = []
        for part in split(path, "/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
            else:
                parts.append(part)
        return "/" + "/".join(parts)

    student = absolute(student_path)
    student_cache = absolute(os.path.join(os.path.dirname(student_path), "__pycache__")) + "/"
    stem = os.path.splitext(os.path.basename(student_path))[0] + "."
    project = tuple(absolute(folder) + "/" for folder in project_dirs)
    trusted = tuple(absolute(root) + "/" for root in trusted_roots)
    loaded = frozenset(absolute(m.__file__) for m in list(sys.modules.values())
                       if type_of(getattr(m, "__file__", None)) is string)
    loader = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")

    def refuse(what):
        write(2, (f"{REFUSED_MARK}your code {what}; a solution computes the piece itself "
                  "(numpy, and the engine's public ops where the exercise allows them)\n"
                  ).encode("utf-8", "replace"))
        exit_now(REFUSED_EXIT)

    def library(filename):  # a file of the standard library or numpy not yet run here
        return (starts(filename, trusted) and not starts(filename, project)
                and filename not in loaded)

    def hook(event, args):
        if event == "exec":
            filename = get_attr(args[0], "co_filename", "")
            if type_of(filename) is not string:
                refuse("ran code whose file name is not a str")
            if starts(filename, "/") and absolute(filename) != student and \
                    not library(absolute(filename)):
                refuse(f"ran the code of {filename} (an import or reload of a module it may "
                       "not use)")
        elif event == "compile":
            caller = frame(1).f_code.co_filename  # who compiles: the loader, a stdlib helper?
            name = args[1]
            if type_of(caller) is not string or type_of(name) not in (string, byte_string):
                refuse("compiled code by a name that is not a str")
            name = to_str(name) if type_of(name) is byte_string else name
            if caller in loader and (absolute(name) == student or library(absolute(name))):
                return  # an import: the student's file, or a lazy import of the library
            if starts(caller, "/") and starts(absolute(caller), trusted) and \
                    not starts(absolute(caller), project):
                return  # dataclasses, namedtuple: the library writes code from strings
            refuse(f"compiled code from a string ({name})")
        elif event == "open":
            path, mode, flags = args[0], args[1], args[2]
            if type_of(path) is byte_string:
                path = to_str(path)
            if type_of(path) is not string:
                refuse("opened a file by something that is not a plain path (a str subclass, "
                       "a descriptor)")
            path = absolute(path)
            writing = (type_of(mode) is string and any_of(c in mode for c in "wax+")) or \
                (mode is None and flags & 0o3103)  # O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND
            if writing:
                refuse(f"opened {path} for writing (the grader's and the workspace's files "
                       "are not the solution's to change)")
            if path == student or (starts(path, student_cache) and
                                   starts(path[len(student_cache):], stem)):
                return
            if starts(path, project) or starts(path, "/proc/"):
                refuse(f"read or loaded {path} (a file it may not use)")
        elif event == "object.__setattr__" or event == "object.__delattr__":
            module = get_attr(args[0], "__module__", None)
            ours = type_of(module) is string and split(module, ".")[0] in OWN_PACKAGES
            if module != "_mt_student" and (args[1] == "__code__" or ours):
                refuse(f"changed {args[1]!r} of {type_of(args[0]).__name__} "
                       f"{get_attr(args[0], '__qualname__', '')}, which is not its own")
        elif starts(event, REFUSED_EVENTS):
            refuse(f"did {event}, which a solution never needs")

    sys.addaudithook(hook)
