"""Data-parallel training over forked processes: each computes forward and backward on its share
of a batch's rows, the gradients are summed, one optimizer step follows (Li et al. 2020,
"PyTorch Distributed"; torch's DistributedDataParallel). Processes, not threads: numpy runs
each elementwise op on one thread, and Python threads serialize on the GIL in between.

The mean loss over B rows is a weighted sum of the shares' means, so are its gradients:

    L = (1/B) Σ_b ℓ_b = Σ_i (n_i / B) · L_i,    ∂L/∂θ = Σ_i ∂[(n_i / B) · L_i]/∂θ.

The parameters live in one shared anonymous mapping (the parent's in-place AdamW update is
what every worker reads next); each worker has shared buffers for its rows and its gradients,
and a step is one small message each way per worker over a Pipe. The parent adds the
gradients in worker order: the same bits every run.
"""
import atexit
import mmap
import multiprocessing
import signal
import struct
import traceback
from contextlib import ExitStack

import numpy as np

import microtensor

TASK = struct.Struct("<Q??")  # parent -> worker: a seed, model.training, whether to backpropagate
LOSS = struct.Struct("<d")    # worker -> parent: its share's term (n_i / B) · L_i
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def share_sizes(batch_size, processes):
    """The rows of each process, contiguous, sizes differing by at most 1, larger first:
    share_sizes(11, 3) == [4, 4, 3]. ValueError unless processes is an int in [1, batch_size]."""
    if not isinstance(processes, (int, np.integer)) or not 1 <= processes <= batch_size:
        raise ValueError(f"--processes must be an int between 1 and --batch-size {batch_size} "
                         f"(each process needs a row of the batch); got {processes}")
    return [batch_size // processes + (i < batch_size % processes) for i in range(processes)]


def shared_arrays(specs):
    """Zeroed arrays, one per (shape, dtype) of `specs`, in one anonymous MAP_SHARED mapping:
    a process forked afterwards writes into the same memory, and nothing is left to clean up."""
    offsets, end = [], 0
    for shape, dtype in specs:
        offsets.append(-(-end // 64) * 64)  # on a cache line (64 B) of its own; numpy gives 16
        end = offsets[-1] + int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = mmap.mmap(-1, max(end, 1))
    return [np.frombuffer(buffer, dtype, count=int(np.prod(shape)), offset=offset).reshape(shape)
            for (shape, dtype), offset in zip(specs, offsets)]


def _share_loss(loss_of, x, y, batch_size):
    """(n / B) · loss_of(x, y) for a share x, y [n, T] of a batch of B rows (a scalar Tensor)."""
    loss = loss_of(x, y)
    return loss if len(x) == batch_size else loss * (len(x) / batch_size)


def _worker(conn, inherited, model, loss_of, grads, x, y, batch_size):
    """Wait for a task, compute the share's loss (and gradients), reply; until EOF."""
    for signum in STOP_SIGNALS:  # the parent stops the run at a step boundary, then us
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    for other in inherited:  # the parent's ends of the pipes: our copies would keep them open
        other.close()
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):  # the parent closed its end or died (ECONNRESET): done
            return
        try:
            seed, training, backward = TASK.unpack(message)
            microtensor.manual_seed(seed)
            model.train(training)
            if backward:
                model.zero_grad()
                loss = _share_loss(loss_of, x, y, batch_size)
                loss.backward()
                for p, g in zip(model.parameters(), grads):
                    g[...] = p.grad
            else:
                with microtensor.no_grad():
                    loss = _share_loss(loss_of, x, y, batch_size)
            reply = b"L" + LOSS.pack(loss.item())
        except Exception:  # the parent raises it
            reply = b"E" + traceback.format_exc().encode("utf-8", "replace")
        try:
            conn.send_bytes(reply)
        except OSError:  # the parent left mid-step (an error, a second Ctrl-C): so do we
            return


class DataParallel:
    """A context manager that splits each batch's forward and backward over `processes`:

        with DataParallel(model, lambda x, y: model(x, y)[1], processes=2,
                          batch_shape=(B, T), reseed=dropout > 0) as parallel:
            loss = parallel.forward_backward(x, y)   # x, y int arrays [B, T]; a float
            val_loss = parallel.loss(x_val, y_val)   # no graph, the model's mode; a float

    loss_of(x, y) is the mean loss of rows x, y [n, T] (a scalar Tensor). processes=1
    computes here; N > 1 forks N - 1 workers on entering, one BLAS thread in each, and every
    parameter's `data` becomes a view of shared memory: update it in place only (AdamW and
    load_state_dict do). reseed (dropout): each step draws a seed per worker from the package
    generator, so a run repeats bit for bit with the same `processes`.

    Workers ignore SIGINT/SIGTERM (the loop stops at a step boundary) and exit when the block
    is left. Raises ValueError for a count out of range or without fork (Windows);
    forward_backward and loss raise RuntimeError when a worker fails (with its traceback) or
    dies, after which the block must be left.
    """

    def __init__(self, model, loss_of, processes, batch_shape, reseed=False):
        self.batch_size, self.block_size = batch_shape
        self.sizes = share_sizes(self.batch_size, processes)
        self.model, self.params = model, model.parameters()
        self.loss_of, self.reseed = loss_of, reseed
        if processes > 1 and "fork" not in multiprocessing.get_all_start_methods():
            raise ValueError(f"--processes {processes} needs the 'fork' start method, which "
                             "this platform lacks; use --processes 1")
        self.workers, self._exit = [], ExitStack()  # workers: (process, conn, grads, x, y)

    def __enter__(self):
        if len(self.sizes) == 1:
            return self
        try:
            # imported here: `import models` works where threadpoolctl is missing (Pyodide)
            from threadpoolctl import threadpool_limits

            self._exit.enter_context(threadpool_limits(limits=1, user_api="blas"))
            self._exit.callback(self.close)
            shared = shared_arrays([(p.shape, p.dtype) for p in self.params])
            for p, array in zip(self.params, shared):
                array[...] = p.data
                p.data = array  # rebinds: the same values, now in shared memory
            for n in self.sizes[1:]:
                self._start_worker(n)
            # Entered without `with` (benchmarks/train_speed.py) and alive at exit: close the
            # pipes before multiprocessing's exit handler (registered at the first fork, so
            # run after ours) waits for workers that ignore its SIGTERM.
            atexit.register(self.close)
            self._exit.callback(atexit.unregister, self.close)
        except BaseException:
            self._exit.close()
            raise
        return self

    def __exit__(self, *exc_info):
        self._exit.close()

    def _start_worker(self, rows):
        *grads, x, y = shared_arrays([(p.shape, p.dtype) for p in self.params]
                                     + [((rows, self.block_size), np.int64)] * 2)
        context = multiprocessing.get_context("fork")
        conn, child_conn = context.Pipe()
        process = context.Process(target=_worker, daemon=True, name="microtensor-data-parallel",
                                  args=(child_conn, [conn] + [w[1] for w in self.workers],
                                        self.model, self.loss_of, grads, x, y, self.batch_size))
        # a Ctrl-C between fork and the worker's SIG_IGN would kill it: blocked until then
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            child_conn.close()
        self.workers.append((process, conn, grads, x, y))

    def forward_backward(self, x, y):
        """Forward and backward of the batch x, y [B, T]; returns its mean loss (a float). Each
        parameter's .grad then holds the full batch's gradient (added to it, as backward()
        does): this process's share first, then the workers' in order."""
        seeds = (microtensor.random.generator().integers(0, 2**63, size=len(self.workers))
                 if self.reseed else [0] * len(self.workers))
        loss = self._share_out(x, y, seeds, backward=True)
        loss.backward()
        total = loss.item()
        for i, (_, _, grads, _, _) in enumerate(self.workers, start=1):
            total += self._receive(i)
            for p, g in zip(self.params, grads):
                p.grad += g
        return total

    def loss(self, x, y):
        """The mean loss of the batch x, y [B, T] (a float) without a graph, in the model's
        current mode, split as in forward_backward."""
        with microtensor.no_grad():
            total = self._share_out(x, y, [0] * len(self.workers), backward=False).item()
        for i in range(1, len(self.workers) + 1):
            total += self._receive(i)
        return total

    def _share_out(self, x, y, seeds, backward):
        """Give each worker its rows and its task; return this process's term (a Tensor)."""
        if x.shape != (self.batch_size, self.block_size) or y.shape != x.shape:
            raise ValueError(f"x and y must be [{self.batch_size}, {self.block_size}]; got "
                             f"{x.shape} and {y.shape}")
        start = self.sizes[0]
        for i, ((_, conn, _, x_share, y_share), n, seed) in enumerate(
                zip(self.workers, self.sizes[1:], seeds), start=1):
            x_share[...], y_share[...] = x[start:start + n], y[start:start + n]
            try:
                conn.send_bytes(TASK.pack(int(seed), self.model.training, backward))
            except OSError:  # its end is closed: it died
                raise self._died(i) from None
            start += n
        return _share_loss(self.loss_of, x[:self.sizes[0]], y[:self.sizes[0]], self.batch_size)

    def _receive(self, i):
        """The loss term worker i sends, or RuntimeError with what went wrong there."""
        try:
            reply = self.workers[i - 1][1].recv_bytes()
        except (EOFError, OSError):  # its end closed, or reset by the kernel: it died
            raise self._died(i) from None
        if reply[:1] == b"E":
            raise RuntimeError(f"data-parallel worker {i} failed:\n" + reply[1:].decode("utf-8"))
        return LOSS.unpack(reply[1:])[0]

    def _died(self, i):
        process = self.workers[i - 1][0]
        process.join(timeout=1)
        return RuntimeError(f"data-parallel worker {i} died (exit code {process.exitcode}); "
                            "training stopped")

    def close(self):
        """Stop the workers: close their pipes (each exits on EOF), wait; kill what lingers."""
        for _, conn, *_ in self.workers:
            conn.close()
        for process, *_ in self.workers:
            process.join(timeout=5)
            if process.is_alive():  # stuck mid-step: SIGTERM is ignored there, so SIGKILL
                process.kill()
                process.join()
        self.workers = []


def data_parallel(model, processes, batch_shape, reseed):
    """None for processes == 1 (the loop computes here), else a DataParallel of the GPT's loss
    model(x, y)[1] over batches of batch_shape (B, T), to enter once the weights are loaded."""
    if processes == 1:
        return None
    return DataParallel(model, lambda x, y: model(x, y)[1], processes, batch_shape, reseed=reseed)
