"""Shared setup for the course tests (notes 3.1–3.8): a fixed seed, and `course_checks` importable.

pytest's default import mode already puts this folder on sys.path; adding it here keeps
`import course_checks` working under `--import-mode=importlib` too.
"""
import os
import sys

import pytest

import microtensor as mt

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same package-wide seed: module init and sampling repeat."""
    mt.manual_seed(0)
