"""Shared setup for the microtensor tests: makes the helper module `mt_testing` importable.

pytest's default import mode already puts this folder on sys.path; adding it here keeps
`import mt_testing` working under `--import-mode=importlib` too.
"""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
