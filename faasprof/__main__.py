"""Allows ``python -m faasprof``."""

import sys

from faasprof.entry import main

sys.exit(main())
