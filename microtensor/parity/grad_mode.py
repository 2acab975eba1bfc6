"""`no_grad` as a decorator, as torch takes it: `@no_grad()`, bare `@no_grad`, and on a
generator function each step without grad while the caller's code between items runs as before.
"""
import functools
import inspect


class GradModeDecorator:
    """What `no_grad` (grad_mode.py) adds to its `__enter__`/`__exit__`: the decorator forms."""

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if func is None:
            return self
        if not callable(func):
            raise TypeError(f"no_grad takes no argument, or the function it decorates; got "
                            f"{type(func).__name__}")
        return self(func)  # bare @no_grad

    def __call__(self, func):
        kind = type(self)
        if inspect.isgeneratorfunction(func):
            return generator_without_grad(func, kind)

        @functools.wraps(func)
        def without_grad(*args, **kwargs):
            with kind():
                return func(*args, **kwargs)
        return without_grad


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
