import dataclasses

_ag = dataclasses.inspect.importlib.import_module("microtensor.autograd")
unbroadcast = _ag.unbroadcast
