"""``python -m backoff_iter``: see backoff_iter/cli."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads
    sys.exit(130)

sys.exit(main())
