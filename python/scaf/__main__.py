"""Entry point for `python -m scaf`."""

import sys

from scaf.cli import main

sys.exit(main())
