"""Honest ex 3: a class with methods, einsum-ish, own exception raised and caught."""
import numpy as np


class ShapeTrouble(Exception):
    pass


class SoftmaxGrad:
    def __init__(self, axis):
        self.axis = axis

    def check(self, a, da):
        if a.shape != da.shape:
            raise ShapeTrouble(f"{a.shape} vs {da.shape}")

    def __call__(self, a, da):
        try:
            self.check(a, da)
        except ShapeTrouble as e:
            print("careful:", e)
        am = np.moveaxis(a, self.axis, -1)
        dam = np.moveaxis(da, self.axis, -1)
        dot = np.einsum("...i,...i->...", am, dam)[..., None]
        return np.moveaxis(am * (dam - dot), -1, self.axis)


def softmax_backward(a, da, axis=-1):
    return SoftmaxGrad(axis)(a, da)
