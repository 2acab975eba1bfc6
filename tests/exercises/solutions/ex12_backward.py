"""Exercise 12, written as a student would: a recursive depth-first search, then the chain rule
over the reversed order."""


def topological_order(inputs, root):
    order, placed = [], set()

    def visit(node):
        if node in placed:
            return
        placed.add(node)
        for parent in inputs[node]:
            visit(parent)
        order.append(node)

    visit(root)
    return order


def backward(inputs, local, root):
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(topological_order(inputs, root)):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] += d * grad[node]
    return grad
