"""Exercise 12, another right answer: Kahn's algorithm (in-degrees) over the nodes the root
depends on: a different order, as topological."""
from collections import deque


def _reachable(inputs, root):
    seen, stack = {root}, [root]
    while stack:
        for parent in inputs[stack.pop()]:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def topological_order(inputs, root):
    nodes = _reachable(inputs, root)
    waiting = {n: len(set(inputs[n])) for n in nodes}
    users = {n: [] for n in nodes}
    for n in nodes:
        for parent in set(inputs[n]):
            users[parent].append(n)
    ready = deque(sorted(n for n in nodes if waiting[n] == 0))
    order = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for user in users[node]:
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    return order


def backward(inputs, local, root):
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(topological_order(inputs, root)):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] += d * grad[node]
    return grad
