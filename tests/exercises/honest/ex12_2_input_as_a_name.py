"""Issue 33: `for input in inputs[node]`, the loop variable named as the builtin: a student's
own name (refused before as "`input` ... can run or reach code")."""
import copy


def topological_order(inputs, root):
    order, placed = [], set()

    def visit(node):
        if node in placed:
            return
        placed.add(node)
        for input in inputs[node]:
            visit(input)
        order.append(node)

    visit(root)
    return order


def backward(inputs, local, root):
    grad = [0.0] * len(inputs)
    grad[root] = 1.0
    for node in reversed(topological_order(copy.deepcopy(inputs), root)):
        for input, d in zip(inputs[node], local[node]):
            grad[input] += d * grad[node]
    return grad


if __name__ == "__main__":  # a self-test the student keeps in the file
    print(backward([[1, 2], [], []], [[2.0, 3.0], [], []], 0))
