"""``python -m backoff_iter`` and the ``backoff-iter`` script: see backoff_iter/cli.

:func:`run` is the entry point of both (:func:`script` the script's, for its
name).  It guards what :func:`~backoff_iter.cli.main` cannot: a Ctrl-C while the
command line's modules import (a tenth of a second or more), and one while the
interpreter exits.
"""

import signal
import sys
from contextlib import suppress

PROG = "python -m backoff_iter"  # as backoff_iter.cli says it; not imported yet here
SCRIPT = "backoff-iter"  # the console script's name (setup.cfg)


def run(prog: str = PROG) -> int:
    """Run the command line; returns its exit status: 130 on Ctrl-C, and no traceback.
    *prog* is how its usage and messages name it."""
    try:
        from .cli import main

        status = main(prog=prog)
        _ignore_ctrl_c()  # checks for a pending one first: caught below
    except KeyboardInterrupt:  # while the command line loads (main() catches its own)
        _ignore_ctrl_c()
        status = 130
        try:
            sys.stderr.write(f"{prog}: interrupted\n")
            sys.stderr.flush()
        except (AttributeError, OSError):  # no stderr (`2>&-`), or a full one
            pass
    return status


def script() -> int:
    """The ``backoff-iter`` script: :func:`run`, its messages naming the script."""
    return run(SCRIPT)


def _ignore_ctrl_c() -> None:
    """Done: a Ctrl-C from now on would only interrupt the interpreter's exit (its last
    flush, its atexit handlers) and print "Exception ignored" and a traceback."""
    with suppress(ValueError):  # ValueError: run() called from a thread other than the main one
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(run())
