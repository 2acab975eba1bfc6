import operator
import typing

_ref = operator.attrgetter("modules")(typing.sys)["importlib"].import_module(
    "models.exercises." + "reference")


def adamw_step(p, g, m, v, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _ref.adamw_step(p, g, m, v, t, lr, betas, eps, weight_decay)
