"""Shared fixtures for the viz tests: a seed, small models after one step, and a DOT reader.

Helpers are handed out as fixtures (not imported), so this conftest never clashes with
the conftest of another test folder.
"""
import re
import shutil
from dataclasses import dataclass, field

import numpy as np
import pytest
from mt_testing import CHROMIUM_MISSING

import microtensor as mt
import viz


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same package-wide seed: weights and batches repeat."""
    mt.manual_seed(0)


@dataclass
class Dot:
    """What a DOT source says: nodes {id: attrs}, edges [(src, dst, attrs)], clusters {name: label},
    and the cluster each node sits in (innermost; "" for none)."""

    nodes: dict = field(default_factory=dict)
    edges: list = field(default_factory=list)
    clusters: dict = field(default_factory=dict)
    cluster_of: dict = field(default_factory=dict)

    def labels(self):
        return [a.get("label", "") for a in self.nodes.values()]

    def find(self, text):
        """Ids of the nodes whose label contains `text`."""
        return [k for k, a in self.nodes.items() if text in a.get("label", "")]


_QUOTED = r'"(?:[^"\\]|\\.)*"'
_ATTR = re.compile(r'(\w+)=(' + _QUOTED + r'|[^\s\]]+)')
_STMT = re.compile(r'^\s*(n\d+)(?:\s*->\s*(n\d+))?\s*(?:\[((?:[^"\]]|' + _QUOTED + r')*)\])?\s*$')
_CLUSTER = re.compile(r'^\s*subgraph "?(cluster_[^"{]*?)"? \{$')


def _unquote(value):
    if value.startswith('"'):
        value = value[1:-1].replace('\\"', '"')
    return value.replace("\x00", "\n")


def parse_dot(source):
    """Read the DOT source that graphviz's Python package writes (one statement per line)."""
    # a label may span lines: hide its newlines so that each statement is one line
    flat = re.sub(_QUOTED, lambda m: m.group(0).replace("\n", "\x00"), source)
    dot, stack = Dot(), [""]
    for line in flat.splitlines():
        opened = _CLUSTER.match(line)
        if opened:
            stack.append(opened.group(1)[len("cluster_"):])
            dot.clusters[stack[-1]] = ""
            continue
        if line.strip() == "{":  # an anonymous subgraph: a rank=same row, in its cluster
            stack.append(stack[-1])
            continue
        if line.strip() == "}":
            stack.pop()
            continue
        if len(stack) > 1 and line.strip().startswith(("color=", "label=", "fontname=")):
            attrs = {k: _unquote(v) for k, v in _ATTR.findall(line)}
            dot.clusters[stack[-1]] = attrs.get("label", "")
            continue
        stmt = _STMT.match(line)
        if not stmt:
            continue
        src, dst, body = stmt.groups()
        attrs = {k: _unquote(v) for k, v in _ATTR.findall(body or "")}
        if dst:
            dot.edges.append((src, dst, attrs))
        else:
            dot.nodes[src] = attrs
            dot.cluster_of[src] = stack[-1]
    return dot


@pytest.fixture
def read_dot():
    """read_dot(graph or DOT source text) -> Dot."""
    return lambda graph: parse_dot(graph if isinstance(graph, str) else graph.source)


def _tiny_gpt(n_layer=2, norm_first=True, vocab=11, block=8, n_embd=8, n_head=2):
    from models import GPT, GPTConfig

    return GPT(GPTConfig(vocab_size=vocab, block_size=block, n_layer=n_layer, n_head=n_head,
                         n_embd=n_embd, norm_first=norm_first))


@pytest.fixture
def tiny_gpt():
    """tiny_gpt(n_layer=2, norm_first=True, ...) -> a GPT: vocab 11, block 8, width 8, 2 heads."""
    return _tiny_gpt


@pytest.fixture
def gpt_step():
    """gpt_step(model, backward=True, B=2, T=8) -> the loss of one step on fixed random ids."""
    def step(model, backward=True, batch=2, seq=8):
        rng = np.random.default_rng(1)
        vocab = model.config.vocab_size
        x, y = rng.integers(0, vocab, (batch, seq)), rng.integers(0, vocab, (batch, seq))
        _, loss = model(x, y)
        if backward:
            with viz.record_grad_norms():
                loss.backward()
        return loss

    return step


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium driven by Playwright (its own browser download is not reachable), one
    per test module; skipped, with the reason CI counts, where either is missing."""
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip(CHROMIUM_MISSING)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"], headless=True)
        yield b
        b.close()
