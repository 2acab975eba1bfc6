"""`@no_grad` on a generator function, as torch: each step of the generator runs without grad,
and the caller's code between the items runs as before."""
import functools


def generator_without_grad(func, no_grad):
    """The generator function `func`, each of whose steps runs inside `no_grad()`."""
    @functools.wraps(func)
    def steps(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with no_grad():
                item = next(gen)
            while True:
                try:
                    sent = yield item
                except GeneratorExit:
                    gen.close()
                    raise
                except BaseException as error:  # thrown in by the caller: pass it on
                    with no_grad():
                        item = gen.throw(error)
                else:
                    with no_grad():
                        item = gen.send(sent)
        except StopIteration as stop:
            return stop.value
    return steps
