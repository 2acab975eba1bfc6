"""Honest ex 12: a self-test block that imports sys (the grader never runs the file as __main__)."""
def topological_order(inputs, root):
    order, seen = [], set()

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        for j in inputs[n]:
            visit(j)
        order.append(n)
    visit(root)
    return order


def backward(inputs, local, root):
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(topological_order(inputs, root)):
        for parent, d in zip(inputs[node], local[node]):
            grad[parent] += d * grad[node]
    return grad


if __name__ == "__main__":
    import sys
    sys.setrecursionlimit(10000)
    print(backward([[], [0, 0]], [[], [2.0, 2.0]], 1))
