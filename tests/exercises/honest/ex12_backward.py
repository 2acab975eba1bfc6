"""Honest ex 12: iterative Kahn with deque + a class."""
from collections import defaultdict, deque


class Graph:
    def __init__(self, inputs, root):
        self.inputs, self.root = inputs, root

    def reachable(self):
        seen, stack = {self.root}, [self.root]
        while stack:
            n = stack.pop()
            for p in self.inputs[n]:
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return seen

    def order(self):
        seen = self.reachable()
        users = defaultdict(int)
        for n in seen:
            for p in set(self.inputs[n]):
                users[p] += 1
        ready, rev = deque([self.root]), []
        while ready:
            n = ready.popleft()
            rev.append(n)
            for p in set(self.inputs[n]):
                users[p] -= 1
                if users[p] == 0:
                    ready.append(p)
        return rev[::-1]


def topological_order(inputs, root):
    return Graph(inputs, root).order()


def backward(inputs, local, root):
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(topological_order(inputs, root)):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] += d * grad[node]
    return grad
