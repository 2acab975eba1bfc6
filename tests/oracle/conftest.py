"""Makes the graph generator `oracle_graphs` importable from the tests in this folder.

pytest's default import mode already puts this folder on sys.path; adding it here keeps
`import oracle_graphs` working under `--import-mode=importlib` too.
"""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
