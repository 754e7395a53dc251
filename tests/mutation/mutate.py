"""Run hand-made mutants, one at a time: ``python tests/mutation/mutate.py [--table] LIST...``.

Each line of a list is ``path :: old :: new :: pytest arguments`` (``\\n`` in
*old* and *new* stands for a line break; lines starting with ``#`` are
comments).  For each mutant the runner replaces the one occurrence of *old* in
*path* by *new*, runs ``python -m pytest -x -q`` with the arguments (with the
Python running this script), reports KILLED or SURVIVED and restores the file.
An *old* found zero or several times is reported as BAD and skipped.

A mutant judged equivalent (no test can tell it from the code) says so in
place of its pytest arguments: ``path :: old :: new :: EQUIVALENT why``.  It
is not run, but its *old* must still be found once (else it is BAD: the
judgement is about code that is gone).

At the end the runner prints, per mutated file, the mutants, how many were
killed, how many are equivalent and the score (killed of the non-equivalent);
``--table`` prints that as the reStructuredText table of CONTRIBUTING.rst's
mutation record.  Run it from the repository root; one run per tree at a time
(a lock file makes a second one wait), since each restores the files the
other mutates.

Each verdict of a run is also appended to a record,
``tests/mutation/record.jsonl`` (``--record=FILE`` for another), so that lists can be run one by
one (or a survivor run again once a test kills it) and counted together
after: ``--recorded`` runs nothing and counts each mutant of the lists by its
latest recorded verdict (mutants judged equivalent are checked as in a run;
a mutant never recorded is said NOT RUN and left out of the counts).
"""

from __future__ import annotations

import collections
import fcntl
import json
import pathlib
import subprocess
import sys

TIMEOUT = 600  # seconds: a mutant that hangs the tests counts as killed


def main(argv: list[str]) -> int:
    table = "--table" in argv
    recorded = "--recorded" in argv
    root = pathlib.Path.cwd()
    record = root / "tests" / "mutation" / "record.jsonl"
    for name in argv:
        if name.startswith("--record="):
            record = pathlib.Path(name[len("--record=") :])
    lists = [name for name in argv if not name.startswith("--")]
    latest = {}
    if recorded and record.exists():
        for entry in map(json.loads, record.read_text().splitlines()):
            latest[entry["path"], entry["old"], entry["new"]] = entry["killed"]
    not_run = 0
    tally: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])  # tried, killed, eq
    bad = 0
    with open(root / ".mutate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in lists:
            for line in pathlib.Path(name).read_text().splitlines():
                if not line.strip() or line.startswith("#"):
                    continue
                path, old, new, args = (part.strip() for part in line.split(" :: "))
                old, new = old.replace("\\n", "\n"), new.replace("\\n", "\n")
                if args.startswith("EQUIVALENT"):
                    killed = None if (root / path).read_text().count(old) != 1 else False
                    verdict = "EQUIVAL "
                elif recorded:
                    if (root / path).read_text().count(old) != 1:
                        killed = None
                    elif (path, old, new) not in latest:
                        not_run += 1
                        print(f"NOT RUN  {path}: {old!r} -> {new!r}", flush=True)
                        continue
                    else:
                        killed = latest[path, old, new]
                    verdict = "KILLED  " if killed else "SURVIVED"
                else:
                    killed = run(root / path, old, new, args.split())
                    verdict = "KILLED  " if killed else "SURVIVED"
                    if killed is not None:
                        entry = {"path": path, "old": old, "new": new, "killed": killed}
                        with open(record, "a") as out:
                            out.write(json.dumps(entry) + "\n")
                if killed is None:
                    bad += 1
                    print(f"BAD      {path}: {old!r} is not found exactly once", flush=True)
                    continue
                counts = tally[path]
                counts[0] += 1
                counts[1] += bool(killed)
                counts[2] += verdict == "EQUIVAL "
                print(f"{verdict} {path}: {old!r} -> {new!r}", flush=True)
    print(report(tally, table))
    tried, killed, equivalent = (sum(c[i] for c in tally.values()) for i in range(3))
    survivors = tried - killed - equivalent
    print(
        f"{tried} tried, {killed} killed, {equivalent} equivalent, {survivors} survived"
        + (f", {bad} bad" if bad else "")
        + (f", {not_run} not run" if not_run else "")
    )
    return 1 if survivors or bad or not_run else 0


def score(killed: int, judged: int) -> str:
    """Killed of the non-equivalent mutants, in percent (floored: 94.9 is not 95)."""
    return f"{int(1000 * killed / judged) / 10:.1f}%" if judged else "-"


def report(tally: dict[str, list[int]], rst: bool) -> str:
    """The per-file counts: plain lines, or a reStructuredText table."""
    rows = [
        (path, str(t), str(k), str(e), score(k, t - e)) for path, (t, k, e) in sorted(tally.items())
    ]
    t, k, e = (sum(c[i] for c in tally.values()) for i in range(3))
    rows.append(("overall", str(t), str(k), str(e), score(k, t - e)))
    head = ("module", "mutants", "killed", "equivalent", "score")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(5)]
    if not rst:
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows)
    rule = "  ".join("=" * w for w in widths)
    lines = [rule, "  ".join(c.ljust(w) for c, w in zip(head, widths)).rstrip(), rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.append(rule)
    return "\n".join(lines)


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
