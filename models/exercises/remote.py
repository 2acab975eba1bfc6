"""The grader's side of sandbox.py: a student's file seen as an object whose functions run in a
child process, one per exercise, and return plain numbers.

`RemoteStudent(ex, path)` refuses the file first (guard.static_check) or starts the child;
`student.split_heads(x, 3)` sends the arguments, waits for the reply (a time limit per check),
and gives back arrays (Tensors without a graph where the student returned Tensors). Nothing the
student's function does to its arguments reaches the grader's arrays: the child works on its
own copies and says only which arguments it wrote into (`written()`), so that a grader can name
an in-place write. `student.task(name, ...)` runs one of
tasks.py's procedures in the child (a backward through the student's graph, a decoding run).
"""
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import guard, sandbox
from .grading import ExerciseFailure

HERE = Path(__file__).resolve().parent


class Refused(ExerciseFailure):
    """The student's file uses what its exercise refuses; the message says what and why."""


class CheckTimeout(BaseException):  # not an Exception: the graders catch those from student code
    """A check ran past its time limit."""


def _exception(name, message):
    """An exception whose type name is the student's (KeyError), carrying its message."""
    kind = type(name if name.isidentifier() else "Error", (Exception,), {"__str__":
                                                                          lambda self: message})
    return kind(message)


class RemoteStudent:
    """A student's file of exercise `ex`, run in its own process."""

    def __init__(self, ex, path):
        self.ex, self.path = ex, Path(path).resolve()  # the child runs in its folder
        self.process, self.functions, self.refusal = None, (), None
        self.deadline, self.seconds = None, None
        self.last_written = ()
        self._log = None
        self._log_read = 0

    # -- lifetime --

    def start_check(self, seconds):
        """Before each check: the static check on the file as it is now, then a fresh import
        of it in the child (started if needed). Raises Refused or ExerciseFailure."""
        self.refusal, self.seconds, self.last_written = None, seconds, ()
        self.deadline = time.monotonic() + seconds
        if not self.path.is_file():
            raise ExerciseFailure(f"{self.path.name} is missing from the workspace (expected at "
                                  f"{self.path}); `microtensor exercises start` writes it")
        source = self.path.read_text(encoding="utf-8", errors="replace")
        if source == self.ex.stub_source():  # the stub as written: no process to start for it
            raise NotImplementedError(_stub_message(source))
        refusal = guard.static_check(source, self.path.name, self.ex.number, self.ex.engine,
                                     self.ex.refused, self.ex.calls_param)
        if refusal:
            self.refusal = refusal
            raise Refused(refusal)
        if self.process is None or self.process.poll() is not None:
            self._spawn()
            reply, _ = self._request({"op": "load", "path": str(self.path),
                                      "number": self.ex.number,
                                      "functions": list(self.ex.functions),
                                      "engine": self.ex.engine, "poison": list(self.ex.refused),
                                      "fenced_ops": list(self.ex.fenced_ops),
                                      "tasks": str(HERE / "tasks.py")})
        else:
            reply, _ = self._request({"op": "reload"})
        if "refused" in reply:
            self.refusal = reply["refused"]
            raise Refused(self.refusal)
        if "import_error" in reply:
            line = reply.get("line")
            where = f"{self.path.name}, line {line}" if line else self.path.name
            raise ExerciseFailure(f"{where} does not import: {reply['import_error']}")
        self.functions = tuple(reply.get("loaded", ()))

    def _spawn(self):
        self._log = tempfile.TemporaryFile()
        self._log_read = 0
        self.process = subprocess.Popen(
            [sys.executable, "-B", str(HERE / "sandbox.py")], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._log, cwd=str(self.path.parent))

    def close(self):
        if self.process is not None:
            for stream in (self.process.stdin, self.process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- calls --

    def __getattr__(self, name):
        if name.startswith("_") or name not in self.__dict__.get("functions", ()):
            raise AttributeError(name)

        def proxy(*args, **kwargs):
            return self._run({"op": "call", "fn": name}, args, kwargs)

        proxy.__name__ = name
        proxy.written = lambda: self.last_written
        return proxy

    def cpu_seconds(self):
        """The child's CPU time so far (user + system, all its threads), read by this process
        from /proc, where the student's code cannot change it; None where /proc is absent."""
        try:
            with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except (OSError, AttributeError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def task(self, name, *args, **kwargs):
        """tasks.py's `name`(student, *args) run in the child; its result as plain values."""
        return self._run({"op": "task", "task": name}, args, kwargs)

    def _run(self, header, args, kwargs):
        import nn
        from microtensor import Tensor

        arrays = []
        header = dict(header, args=sandbox.encode(list(args), arrays, Tensor, nn.TransformerBlock),
                      kwargs=sandbox.encode(kwargs, arrays, Tensor, nn.TransformerBlock))
        reply, got = self._request(header, arrays)
        if "refused" in reply:
            self.refusal = reply["refused"]
            raise Refused(self.refusal)
        if "not_started" in reply:
            raise NotImplementedError(reply["not_started"])
        if "error" in reply:
            name, message = reply["error"]
            raise _exception(str(name), str(message))
        if "bad_return" in reply:
            raise ExerciseFailure(f"{header.get('fn', 'your code')}(...) returned "
                                  f"{reply['bad_return']}, which is not numbers; return arrays "
                                  "(or Tensors) as the stub's docstring says")

        def tensor(array, grad):
            return Tensor(array)

        try:
            value = sandbox.decode(reply["ok"], got, tensor)
            self.last_written = tuple(int(i) for i in reply.get("wrote", ()))
        except (sandbox.ChannelError, KeyError, IndexError, TypeError, ValueError) as error:
            raise ExerciseFailure(f"the reply of your code could not be read back "
                                  f"({type(error).__name__}: {error})") from None
        return value

    def _request(self, header, arrays=()):
        try:
            sandbox.send(self.process.stdin, header, arrays)
            reply = self._receive()
        except (BrokenPipeError, EOFError, OSError):
            code = self.process.wait()
            what = header.get("fn") or header.get("task") or "the import"
            refusal = self._echo()
            self.close()
            if code == guard.REFUSED_EXIT and refusal:
                self.refusal = refusal
                raise Refused(refusal) from None
            raise ExerciseFailure(f"the Python process running your code ended (exit code "
                                  f"{code}) during {what}; a crash, or a call to exit()") from None
        except sandbox.ChannelError as error:
            self.close()
            raise ExerciseFailure(f"the reply of your code could not be read: {error}") from None
        finally:
            self._echo()
        return reply

    def _receive(self):
        """One reply, waiting no longer than the check's deadline (CheckTimeout after it)."""
        stream = _DeadlineReader(self.process.stdout.fileno(), self.deadline, self)
        return sandbox.receive(stream)

    def _echo(self):
        """Print what the student's code printed since the last call (pytest keeps it); return
        the audit hook's refusal among it (guard.seal), if one ended the child."""
        if self._log is None:
            return None
        self._log.seek(self._log_read)
        raw = self._log.read()
        self._log_read += len(raw)
        text = raw.decode("utf-8", errors="replace")
        refusal = None
        if guard.REFUSED_MARK in text:
            text, _, refusal = text.rpartition(guard.REFUSED_MARK)
            refusal = refusal.strip()
        if text.strip():
            print(text.rstrip("\n"))
        return refusal


def _stub_message(source):
    """The message of the stub's first `raise NotImplementedError("...")`."""
    import ast

    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "NotImplementedError"
                and node.args and isinstance(node.args[0], ast.Constant)):
            return str(node.args[0].value)
    return "the stub is still in place"


class _DeadlineReader:
    """`read(n)` on a file descriptor that raises CheckTimeout at the deadline (and stops the
    child: it is stuck in the student's code)."""

    def __init__(self, fd, deadline, owner):
        self.fd, self.deadline, self.owner = fd, deadline, owner

    def read(self, n):
        left = self.deadline - time.monotonic()
        ready, _, _ = select.select([self.fd], [], [], max(left, 0))
        if not ready:
            self.owner.close()
            raise CheckTimeout
        return os.read(self.fd, min(n, 1 << 20))
