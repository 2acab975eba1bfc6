"""`python -m models ...` runs the `microtensor` command line (as `python -m models.cli`)."""
import sys

from .cli.main import main

sys.exit(main())
