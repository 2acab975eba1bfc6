"""What the graders refuse in a student's file, and how: "the piece must be the student's".

Three fences, each with a one-line reason the student reads; none refuses a name of the
student's own (`input`, a helper called `sublayer`, a class `KVCache`, `getattr`):
1. Before anything runs, the grader reads the file's syntax tree (`static_check`): imports are
   limited to numpy, math and a few of Python's small helpers (plus microtensor's and nn's
   public names in the exercises built on the engine); the engine's internals (any submodule
   but `microtensor.functional`), the reference answers (`models`) and torch are refused, and
   so is the machinery that reaches code (`__code__`, `__subclasses__`, frames, `eval`).
2. In the child process (sandbox.py) the file runs with an import fence (the same list, at run
   time), and the exercise's piece is fenced where it lives, as an object (`poison`): a class
   changed in place, a function's code swapped, every reference the engine holds replaced, so
   that every road to it (a dotted name built at run time, `object.__subclasses__()`, a frame)
   meets a function that refuses. The child never needs the piece; the original code is kept
   nowhere in it.
3. Names have aliases (dataclasses.inspect.importlib), so last, in the child, Python's audit
   hook watches acts (`seal`): another file's code run, code compiled from a string, a file
   written, a file of the project (or of the clone it is installed from) read, a frame taken
   (`sys._getframe`, `tb_frame`: a frame's locals lead to the grader's objects), a thread or a
   process started end the child with a refusal. The hook and the import fence bind what they
   read when they are made: rebinding this module's globals changes neither.

All of this runs inside the child, in Python: it is not an operating-system sandbox (see
docs/exercises.md, "What is not enforced").

The engine's layout may change (modules move, merge): nothing here names a module path of its
internals. "Internal" is found by asking the package which submodules it has.

This file imports nothing of the project: the child loads it before anything else.
"""
import ast
import builtins
import importlib.util
import sys

SMALL_HELPERS = ("numpy", "math", "functools", "itertools", "collections", "dataclasses",
                 "typing", "__future__", "operator", "heapq", "bisect", "numbers", "copy")
ENGINE = ("microtensor", "microtensor.functional", "nn")
# builtins that run a string as code: refused by name where the file does not define its own
STATIC_BUILTINS = ("eval", "exec", "compile", "breakpoint", "__builtins__", "__loader__",
                   "__spec__")
# absent from the student's builtins (the audit hook refuses them however reached)
RUNTIME_ABSENT = ("eval", "exec", "compile", "breakpoint", "input")
# dunders that reach code objects, globals and the class tree (no answer needs them; `__name__`,
# `__class__`, `__init__` and the like are a student's to use)
MACHINERY = ("__code__", "__globals__", "__dict__", "__subclasses__", "__builtins__",
             "__closure__", "__mro__", "__bases__", "__base__", "__loader__", "__spec__",
             "__import__", "__reduce__", "__reduce_ex__", "__getattribute__", "__traceback__",
             "__defaults__", "__kwdefaults__", "__wrapped__", "__func__", "__self__",
             "__getstate__", "__setstate__", "__class_getitem__", "__init_subclass__",
             "__set_name__", "__objclass__")
# numpy's file readers and writers: np.load(..., allow_pickle=True) runs whatever a pickle
# names (the reference, say), and a file read or written is a channel the grader cannot see
FILE_ATTRIBUTES = ("load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "memmap", "save",
                   "savez", "savez_compressed", "savetxt", "tofile", "DataSource", "npyio",
                   "ctypeslib")
# frames, code objects and module tables: the ways one function reaches another's data
BANNED_ATTRIBUTES = ("f_back", "f_locals", "f_globals", "f_code", "gi_frame", "cr_frame",
                     "tb_frame", "tb_next", "_getframe", "co_code", "func_globals")


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
    allowed = (f"numpy, math, Python's small helpers ({', '.join(SMALL_HELPERS[2:])}) and "
               "their submodules" + (", microtensor, microtensor.functional and nn (their "
                                     "public names)" if engine else ""))
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
    return f"exercise {number} may import only {allowed}; your file imports {name}: {why}"


def _submodules(package):
    """The names of `package`'s submodules (its internals), asked of the installed package."""
    import pkgutil

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return set()
    return {m.name for m in pkgutil.iter_modules(spec.submodule_search_locations)}


def static_check(source, filename, number, engine, refused=(), calls_param=None):
    """The first reason to refuse `source` (the student's file) before it runs, or None.

    It reads imports and Python's machinery only: a module the exercise may not import, a
    dunder that reaches code, globals or classes (`__code__`, `__subclasses__`), a frame's
    attribute, numpy's file readers, and eval/exec/compile where the file does not define
    them itself. It never refuses a name of the student's own (`input` as a loop variable, a
    helper called `sublayer`, a class `KVCache`, `getattr` with a default): the exercise's
    piece is fenced where it lives, in the child (`poison`). `refused` and `calls_param` are
    kept for callers of the old signature and unused.
    """
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return None  # the import itself reports it, with its line
    internals = {"microtensor": _submodules("microtensor") - {"functional"},
                 "nn": _submodules("nn")} if engine else {}
    aliases = {}  # local name -> "microtensor" / "nn", from `import microtensor as mt`
    own = {node.id for node in ast.walk(tree)
           if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    own |= {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    own |= {a.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
            for a in (*node.posonlyargs, *node.args, *node.kwonlyargs,
                      *(x for x in (node.vararg, node.kwarg) if x))}
    where = f"{filename}, line "
    # a self-test under `if __name__ == "__main__":` never runs while grading (the grader
    # imports the file under another name), so its imports are the student's own business
    self_test = {id(inner) for node in ast.walk(tree) if _is_main_block(node)
                 for statement in node.body for inner in ast.walk(statement)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) in self_test:
            continue
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
                if refusal:  # the verdict names the exercise; the line says why
                    refusal = refusal.replace(f"exercise {number} may import", "it may import", 1)
                    return f"{where}{line}: {refusal}"
            for alias in node.names:
                if isinstance(node, ast.Import) and alias.name in ("microtensor", "nn"):
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            if attr in MACHINERY:
                return (f"{where}{line}: `.{attr}` reaches into Python's machinery (code "
                        "objects, globals, classes), where the grader's own code is; it is "
                        "refused in an exercise")
            if attr in FILE_ATTRIBUTES:
                return (f"{where}{line}: `.{attr}` reads or writes files (np.load can run "
                        "code a pickle names); an exercise works on the arrays it is given")
            if attr in BANNED_ATTRIBUTES:
                return (f"{where}{line}: `.{attr}` reads another function's frame; it is "
                        "refused in an exercise")
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
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in STATIC_BUILTINS and node.id not in own:
                return (f"{where}{line}: `{node.id}` is refused in an exercise (it can run or "
                        "reach code the file does not show)")
    return None


def _is_main_block(node):
    """Whether `node` is `if __name__ == "__main__":` (either side of the ==)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(mains) == 1


# ---- the child's side: the import fence and the poisoned pieces ----

def fenced_builtins(module_name, number, engine, on_refusal):
    """A builtins dict for the student's module (`module_name`, kept for callers; the fence
    does not go by it): `__import__` refuses what static_check refuses (a name put together at
    run time included, and an import in a self-test block when the file runs it); eval, exec,
    compile, breakpoint and input are absent (the audit hook refuses them however reached)."""
    # bound here: a student who reaches this module's globals (the function's __globals__)
    # and rebinds import_refusal changes nothing the fence calls
    real_import, refusal_of, submodules = builtins.__import__, import_refusal, _submodules
    refused_class = Refusal
    allowed, helpers = frozenset(allowed_imports(engine)), frozenset(SMALL_HELPERS)

    def refusal_for(name, engine):  # the decision made here, the wording asked of the module
        if name in allowed or name.split(".")[0] in helpers:
            return None
        return (refusal_of(name, number, engine)
                or f"exercise {number}: your file imports {name}: refused")

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        # only code whose builtins are this dict calls it: the student's module (whatever it
        # sets its own __name__ to: `__name__ = "__main__"` changes nothing here)
        if level:
            refusal = f"exercise {number}: a relative import is refused"
        else:
            refusal = refusal_for(name, engine)
            for item in fromlist or ():
                sub = f"{name}.{item}"
                if refusal is None and name in ("microtensor", "nn") and \
                        item in submodules(name) - {"functional"}:
                    refusal = refusal_of(sub, number, False) or f"{sub}: refused"
        if refusal:
            on_refusal(refusal)
            raise refused_class(refusal)
        return real_import(name, globals, locals, fromlist, level)

    fenced = {k: v for k, v in vars(builtins).items() if k not in RUNTIME_ABSENT}
    fenced["__import__"] = guarded_import
    return fenced


def fenced_objects(dotted_names, op_names):
    """The objects an exercise fences, found in the loaded engine: each dotted public name
    ("nn.scaled_dot_product_attention", "nn.TransformerBlock.forward") resolved, and every
    class of microtensor or nn whose name is in `op_names` ("TiledAttention", the engine's
    Function subclasses and nn's helpers, wherever their module now is: found by walking
    object's subclasses, never by a module path). A name the package no longer has is
    skipped."""
    found = []
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
        if original is not None:
            found.append((dotted, owner if isinstance(owner, type) else None, parts[-1],
                          original))
    if op_names:
        seen, todo = set(), [object]
        while todo:
            cls = todo.pop()
            try:
                subs = type.__subclasses__(cls)
            except TypeError:
                continue
            for sub in subs:
                if id(sub) in seen:
                    continue
                seen.add(id(sub))
                todo.append(sub)
                module = getattr(sub, "__module__", "") or ""
                if sub.__name__ in op_names and module.split(".")[0] in ("microtensor", "nn"):
                    found.append((f"{module}.{sub.__qualname__}", None, sub.__name__, sub))
    return found


def poison(dotted_names, number, on_refusal, op_names=()):
    """Fence each object of `fenced_objects` where it lives, so that every road to it (an
    attribute string, `object.__subclasses__()`, a frame, a module's dict) meets the fence:

    - a class: every function of its own dict (`__init__`, `forward`, `append`, ...) replaced,
      in the class object itself, by one that refuses;
    - a method (`nn.TransformerBlock.forward`): replaced in its class;
    - a function: its code object swapped, in place, for one that refuses (where it has no
      closure), and every reference the engine's modules, classes, closures and defaults hold
      replaced by a function that refuses.
    The original code is kept nowhere in the child."""
    for dotted, owner, attr, original in fenced_objects(dotted_names, op_names):
        message = (f"exercise {number}: your code called {dotted}, the piece this exercise asks "
                   "you to write (or one built on it): refused")
        refuse = _refuser(message, on_refusal)
        if isinstance(original, type):
            for name, value in list(vars(original).items()):
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if callable(value) and hasattr(value, "__code__"):
                    type.__setattr__(original, name, refuse)
                    _swap_code(value, message, on_refusal)
            continue
        if owner is not None:
            type.__setattr__(owner, attr, refuse)
        _swap_code(original, message, on_refusal)
        _replace_everywhere(original, refuse)


def _refuser(message, on_refusal):
    def refuse(*args, **kwargs):
        on_refusal(message)
        raise Refusal(message)
    return refuse


def _swap_code(function, message, on_refusal):
    """Give `function` (the object itself, reached by any road) code that refuses: the code of
    a function defined here with as many free variables as it has."""
    code = getattr(function, "__code__", None)
    if code is None:
        return
    n = len(code.co_freevars)
    if n == 0:
        namespace = {}
        # a refusing function whose code reads one name of the original's globals
        globals_ = function.__globals__
        globals_["_mt_refuse_" + str(number_of(message))] = _refuser(message, on_refusal)
        source = ("def _refuse(*args, **kwargs):\n"
                  f"    return _mt_refuse_{number_of(message)}()\n")
        exec(compile(source, "<fenced>", "exec"), globals_, namespace)
        try:
            function.__code__ = namespace["_refuse"].__code__
        except (ValueError, TypeError):
            pass


def number_of(message):
    return abs(hash(message)) % 10**9


def _replace_everywhere(original, replacement):
    """Every reference to `original` held by the engine's modules (their dicts, the dicts of
    their classes, module-level lists and dicts) and by their functions' closures and
    defaults, replaced by `replacement`."""
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in ("microtensor", "nn"):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, replacement)
            elif isinstance(value, type):
                for key, item in list(vars(value).items()):
                    if item is original:
                        type.__setattr__(value, key, replacement)
                    _replace_in_function(item, original, replacement)
            elif isinstance(value, dict):
                for key, item in list(value.items()):
                    if item is original:
                        value[key] = replacement
            elif isinstance(value, list):
                value[:] = [replacement if item is original else item for item in value]
            _replace_in_function(value, original, replacement)


def _replace_in_function(function, original, replacement):
    if isinstance(function, (staticmethod, classmethod)):
        function = function.__func__
    for cell in getattr(function, "__closure__", None) or ():
        try:
            if cell.cell_contents is original:
                cell.cell_contents = replacement
        except ValueError:  # an empty cell
            continue
    defaults = getattr(function, "__defaults__", None)
    if defaults and any(d is original for d in defaults):
        function.__defaults__ = tuple(replacement if d is original else d for d in defaults)
    kwdefaults = getattr(function, "__kwdefaults__", None)
    if kwdefaults:
        for key, item in list(kwdefaults.items()):
            if item is original:
                kwdefaults[key] = replacement
    if getattr(function, "__wrapped__", None) is original:
        function.__wrapped__ = replacement


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
                  "signal.pthread_kill", "builtins.input", "_thread.start_new_thread",
                  "webbrowser.", "urllib.", "http.",
                  "ftplib.", "smtplib.", "imaplib.", "poplib.", "telnetlib.", "nntplib.")


def seal(student_path, project_dirs, trusted_roots, number, installed_root=None):
    """From now on, end this process with a refusal when code in it runs another file's code
    (an import or reload of the project, torch, or any module already loaded: the reference
    answers and the exercise's piece are among them), compiles code from a string itself (the
    standard library's helpers, dataclasses and namedtuple, still may), opens any file for
    writing, reads a file of the project (but the student's own) or of /proc, or does one of
    REFUSED_EVENTS. Lazy imports of the standard library and numpy (files under
    `trusted_roots`, not yet loaded) still run.

    `installed_root`: the folder the project is installed from (a clone, for an editable
    install: its tests/ hold solutions): no file under it is read but the library's and the
    student's own. Compiling a string is the import system's alone, and that of the two
    standard-library files that write code from identifiers they checked (dataclasses,
    collections' namedtuple; ast, which only parses); typing may compile a ForwardRef made of
    names, attributes, subscripts and `|` (a type, no call).

    Frames: `sys._getframe` and `sys._current_frames` (a frame's `f_locals` reach the grader's
    objects), and a frame read off a traceback or a generator (`tb_frame`, `gi_frame`), are
    refused unless the caller is a library file that uses the frame itself (typing,
    collections, enum, ...: it never hands it to the student) or the sandbox.

    Everything the hook calls or reads is bound here, as locals of this call (tuples,
    frozensets), before the student's code runs: a student who rebinds os.path, builtins
    attributes or this module's globals (REFUSED_EVENTS, OWN_PACKAGES, ...) changes nothing
    the hook uses."""
    import os

    refused_events, own_packages = tuple(REFUSED_EVENTS), frozenset(OWN_PACKAGES)
    refused_mark, refused_exit = str(REFUSED_MARK), int(REFUSED_EXIT)

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
    import collections
    import dataclasses
    import enum
    import functools
    import typing
    import warnings
    # dataclasses and namedtuple write code from identifiers they checked, but only while they
    # build a class (`_process_class`, `namedtuple` on the stack): a private helper such as
    # dataclasses._create_fn called by the student compiles whatever it is given
    dataclasses_file, collections_file = absolute(dataclasses.__file__), absolute(
        collections.__file__)
    builders = frozenset({(dataclasses_file, "_process_class"),
                          (collections_file, "namedtuple")})
    code_writers = frozenset({dataclasses_file, collections_file})
    parser = absolute(ast.__file__)  # ast only parses (a syntax tree runs nothing: compiling
    # it to code is a compile of its own)
    typing_file = absolute(typing.__file__)
    # library files that call sys._getframe for a module's name and never return the frame
    frame_users = frozenset(absolute(m.__file__) for m in (typing, collections, enum,
                                                           dataclasses, functools, warnings))
    sandbox_file = absolute(os.path.join(os.path.dirname(absolute(__file__)), "sandbox.py"))
    frame_attributes = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back",
                                  "f_locals", "f_globals", "gi_code", "cr_code", "ag_code"})
    busy = [False]  # the hook's own sys._getframe raises an audit event: not checked again
    installed = absolute(installed_root) + "/" if installed_root else "\x00"
    parse, walk, instance = ast.parse, ast.walk, isinstance
    # what a type annotation is made of: names, attributes, subscripts, tuples, X | Y, constants
    plain = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List,
             ast.Constant, ast.Load, ast.BinOp, ast.BitOr, ast.Slice)

    def annotation(text):
        try:
            tree = parse(text, mode="eval")
        except (SyntaxError, ValueError):
            return False
        return all(instance(node, plain) for node in walk(tree))

    def refuse(what):
        write(2, (f"{refused_mark}your code {what}; a solution computes the piece itself "
                  "(numpy, and the engine's public ops where the exercise allows them)\n"
                  ).encode("utf-8", "replace"))
        exit_now(refused_exit)

    def library(filename):  # a file of the standard library or numpy not yet run here
        return (starts(filename, trusted) and not starts(filename, project)
                and filename not in loaded)

    def caller_file():  # the file of the Python code that raised the event
        name = frame(3).f_code.co_filename  # 0 this, 1 check, 2 hook, 3 the caller
        if type_of(name) is not string:
            return "?"
        return absolute(name) if starts(name, "/") else name

    def building():  # a dataclass or namedtuple being built, somewhere on the stack
        f = frame(3)
        while f is not None:
            code = f.f_code
            if (code.co_filename, code.co_name) in builders:
                return True
            f = f.f_back
        return False

    def hook(event, args):
        if busy[0]:
            return
        busy[0] = True
        try:
            check(event, args)
        finally:
            busy[0] = False

    def check(event, args):
        if event == "sys._getframe" or event == "sys._current_frames":
            caller = caller_file()
            if event == "sys._current_frames" or (caller not in frame_users and
                                                   caller != sandbox_file):
                refuse(f"called {event} (from {split(caller, '/')[-1]}): a frame's locals "
                       "reach the grader's objects")
        elif event == "object.__getattr__" and args[1] in frame_attributes:
            caller = caller_file()
            if caller != sandbox_file:
                refuse(f"read .{args[1]} (from {split(caller, '/')[-1]}): a frame's locals "
                       "reach the grader's objects")
        elif event == "exec":
            filename = get_attr(args[0], "co_filename", "")
            if type_of(filename) is not string:
                refuse("ran code whose file name is not a str")
            if starts(filename, "/") and absolute(filename) != student and \
                    not library(absolute(filename)):
                refuse(f"ran the code of {filename} (an import or reload of a module it may "
                       "not use)")
        elif event == "compile":
            caller = frame(2).f_code.co_filename  # who compiles: the loader, a stdlib helper?
            source, name = args[0], args[1]
            if type_of(caller) is not string or type_of(name) not in (string, byte_string):
                refuse("compiled code by a name that is not a str")
            name = to_str(name) if type_of(name) is byte_string else name
            if caller in loader and (absolute(name) == student or library(absolute(name))):
                return  # an import: the student's file, or a lazy import of the library
            if starts(caller, "/") and absolute(caller) == parser:
                return
            if starts(caller, "/") and absolute(caller) in code_writers and building():
                return  # a dataclass, a namedtuple: code written from identifiers they checked
            if type_of(source) is byte_string:  # the event gives a string source as bytes
                source = to_str(source)
            if caller == typing_file and type_of(source) is string and annotation(source):
                return  # typing's ForwardRef("tuple[int, ...]"): names, no call, no code
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
            if starts(path, project) or starts(path, "/proc/") or (
                    starts(path, installed) and not starts(path, trusted)):
                refuse(f"read or loaded {path} (a file it may not use)")
        elif event == "object.__setattr__" or event == "object.__delattr__":
            module = get_attr(args[0], "__module__", None)
            ours = type_of(module) is string and split(module, ".")[0] in own_packages
            if module != "_mt_student" and (args[1] == "__code__" or ours):
                refuse(f"changed {args[1]!r} of {type_of(args[0]).__name__} "
                       f"{get_attr(args[0], '__qualname__', '')}, which is not its own")
        elif starts(event, refused_events):
            refuse(f"did {event}, which a solution never needs")

    sys.addaudithook(hook)
