"""Suite-wide rule: in CI (CI=true) a test skipped because an optional package (or Graphviz's
`dot`, or the `chromium` the browser tests drive) is missing fails the run.

Tests that need PyTorch, transformers, ... use `pytest.importorskip`, so the README's
test command passes on a plain install. CI installs every optional extra; there a skip
for a missing import means the extras were not installed and the oracle tests never ran.
"""
import os
import sys
from pathlib import Path

import pytest

# the suite's one helper module, tests/mt_testing.py, importable from every test folder
# (pytest's default import mode does this already; --import-mode=importlib does not)
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# importable once the path above is set
from mt_testing import CHROMIUM_MISSING, DOT_MISSING  # noqa: E402

_missing = []


def _note_missing_import(report):
    if report.skipped and any(text in str(report.longrepr) for text in
                              ("could not import", DOT_MISSING, CHROMIUM_MISSING)):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        _missing.append(f"{report.nodeid}: {reason}")


def pytest_collectreport(report):
    _note_missing_import(report)


def pytest_runtest_logreport(report):
    _note_missing_import(report)


def pytest_sessionfinish(session, exitstatus):
    # .ci/run's second run (the oldest numpy, the test extra only) sets
    # MICROTENSOR_SKIPS_ALLOWED=1: there the optional packages are missing on purpose
    if (os.environ.get("CI", "").lower() in ("1", "true", "yes") and _missing
            and os.environ.get("MICROTENSOR_SKIPS_ALLOWED") != "1"):
        print("\nCI=true, but tests were skipped for a missing optional package or program "
              "(pip install -e '.[test,torch,interop,notebooks,browser]'; "
              "apt-get install graphviz chromium):")
        for line in _missing:
            print("  " + line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
