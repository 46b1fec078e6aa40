"""`python -m perfgate ...`: the same command line as the `perfgate` console script."""
import sys

from .cli import main

sys.exit(main())
