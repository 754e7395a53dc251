"""``python -m backoff_iter``: see cli.py."""

import sys

from .cli import main

sys.exit(main())
