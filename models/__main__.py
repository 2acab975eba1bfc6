"""`python -m models ...` runs the `microtensor` command line.

The same as `python -m models.cli ...`.
"""
import sys

from .cli.main import main

sys.exit(main())
