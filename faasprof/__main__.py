"""Allows ``python -m faasprof``."""

import sys

from faasprof.cli import main

sys.exit(main())
