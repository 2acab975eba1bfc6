"""Shared setup for the course tests (notes 3.1–3.8): a fixed seed (helpers come from
tests/mt_testing.py)."""
import pytest

import microtensor as mt


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same package-wide seed: module init and sampling repeat."""
    mt.manual_seed(0)
