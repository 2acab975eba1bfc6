"""Shared fixtures for the nn tests: a fixed seed, and the helpers of `mt_testing` handed out as
fixtures.

The helpers themselves live in tests/mt_testing.py, the suite's one helper module.
"""
import mt_testing
import pytest

import microtensor as mt


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same package-wide seed: module init and dropout repeat."""
    mt.manual_seed(0)


@pytest.fixture
def to_float64():
    return mt_testing.to_float64


@pytest.fixture
def weighted_gradcheck():
    return mt_testing.weighted_gradcheck


@pytest.fixture
def graph_nodes():
    return mt_testing.graph_nodes


@pytest.fixture
def np_softmax():
    return mt_testing.np_softmax
