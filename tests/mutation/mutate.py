"""Run hand-made mutants, one at a time: ``python tests/mutation/mutate.py LIST...``.

Each line of a list is ``path :: old :: new :: pytest arguments`` (``\\n`` in
*old* and *new* stands for a line break; lines starting with ``#`` are
comments).  For each mutant the runner replaces the one occurrence of *old* in
*path* by *new*, runs ``python -m pytest -x -q`` with the arguments (with the
Python running this script), reports KILLED or SURVIVED and restores the file.
An *old* found zero or several times is reported as BAD and skipped.  Run it
from the repository root; one run per tree at a time (a lock file makes a
second one wait), since each restores the files the other mutates.
"""

from __future__ import annotations

import fcntl
import pathlib
import subprocess
import sys

TIMEOUT = 600  # seconds: a mutant that hangs the tests counts as killed


def main(lists: list[str]) -> int:
    root = pathlib.Path.cwd()
    survivors = tried = 0
    with open(root / ".mutate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in lists:
            for line in pathlib.Path(name).read_text().splitlines():
                if not line.strip() or line.startswith("#"):
                    continue
                path, old, new, args = (part.strip() for part in line.split(" :: "))
                old, new = old.replace("\\n", "\n"), new.replace("\\n", "\n")
                killed = run(root / path, old, new, args.split())
                if killed is None:
                    print(f"BAD      {path}: {old!r} is not found exactly once", flush=True)
                    continue
                tried += 1
                survivors += not killed
                verdict = "KILLED  " if killed else "SURVIVED"
                print(f"{verdict} {path}: {old!r} -> {new!r}", flush=True)
    print(f"{tried} tried, {tried - survivors} killed, {survivors} survived")
    return 1 if survivors else 0


def run(file: pathlib.Path, old: str, new: str, args: list[str]) -> bool | None:
    """Whether the tests fail with *old* replaced by *new* in *file* (None: no single *old*)."""
    text = file.read_text()
    if text.count(old) != 1:
        return None
    file.write_text(text.replace(old, new))
    try:
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
        if done.returncode in (4, 5):  # pytest's usage error, no test collected: the list's fault
            raise SystemExit(f"pytest {' '.join(args)}: {done.stdout[-300:]}{done.stderr[-300:]}")
        return done.returncode != 0
    except subprocess.TimeoutExpired:
        return True
    finally:
        file.write_text(text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
