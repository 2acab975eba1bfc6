"""`python -m models.cli ...` runs the `microtensor` command line."""
import sys

from .main import main

sys.exit(main())
