"""The loop forms now against the same forms at an earlier commit, in one process.

Issue 24 reshaped the house (options defined once, parts as stages) and
asked that the loop forms be no slower than when it was filed, at commit
17c3e26.  This script takes that commit's ``backoff_iter/`` out of git
(``git archive``) into a temporary folder as the package
``backoff_iter_then``, builds each form of both (``benchmarks/drivers.py``'s
``forms``: ``@retry``, a fresh ``retrying()`` loop, a module-level policy, and
the async ones) and times them interleaved in one process, best of N rounds:
per call that succeeds at once, and per retry (a call that fails 10 times
first, less one that succeeds, over 10)::

    python benchmarks/before_after.py [--commit 17c3e26] [--calls 300] [--rounds 15]

It prints ns and now/then for each form; below 1.00x is faster now.  Since
issue 23 retries are logged at WARNING by default, which the earlier code did
not do: while timing, the log is at ERROR (its hook is still asked once per
call), as a service that silences it would have it.  Run from a git checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from drivers import RETRIES, Flaky, async_forms, forms
from timing import ainterleaved, arepeated, interleaved, quiet_retry_log, repeated

import backoff_iter

ISSUE_24 = "17c3e26"  # the commit issue 24 was filed against


def then(commit: str, folder: Path) -> Any:
    """*commit*'s backoff_iter package, imported as ``backoff_iter_then``."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", commit, "backoff_iter"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "x", "-C", str(folder)], input=archive, check=True)
    package = folder / "backoff_iter_then"
    (folder / "backoff_iter").rename(package)
    # Imported from its folder by name, leaving sys.path alone (the installed
    # backoff_iter is the one imported as such).
    spec = importlib.util.spec_from_file_location(
        package.name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[package.name] = module
    spec.loader.exec_module(module)
    return module


def compare(
    libraries: dict[str, Any], calls: int, rounds: int
) -> list[tuple[str, str, float, float, float]]:
    """(form, path, ns then, ns now, now/then) for every form, success and per retry."""
    runs: dict[tuple[str, str, int], Callable[[], object]] = {}
    for era, library in libraries.items():
        for failures in (0, RETRIES):
            for form, call in forms(library, Flaky(failures)).items():
                call()  # untimed: the first call imports what the form uses lazily
                n = calls if failures else calls * RETRIES
                runs[form, era, failures] = repeated(call, n)
    sync = interleaved(runs, 1, rounds)  # ns per run: divided below

    async def measure() -> dict[tuple[str, str, int], float]:
        aruns: dict[tuple[str, str, int], Callable[[], Coroutine[Any, Any, None]]] = {}
        for era, library in libraries.items():
            for failures in (0, RETRIES):
                flaky = Flaky(failures)

                async def operation(flaky: Flaky = flaky) -> int:
                    return flaky()

                for form, call in async_forms(library, operation).items():
                    await call()  # untimed, as above
                    n = calls if failures else calls * RETRIES
                    aruns[form, era, failures] = arepeated(call, n)
        return await ainterleaved(aruns, 1, rounds)

    timed = {**sync, **asyncio.run(measure())}
    rows = []
    for form in dict.fromkeys(form for form, _, _ in timed):
        ns = {}
        for era in libraries:
            success = timed[form, era, 0] / (calls * RETRIES)
            retried = timed[form, era, RETRIES] / calls
            ns[era] = (success, (retried - success) / RETRIES)
        for i, path in enumerate(("success", "per retry")):
            before, after = ns["then"][i], ns["now"][i]
            rows.append((form, path, before, after, after / before))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--commit", default=ISSUE_24, help="the earlier commit (default: %(default)s)"
    )
    parser.add_argument("--calls", type=int, default=300, help="calls per timed run")
    parser.add_argument("--rounds", type=int, default=15, help="rounds; the best is kept")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder, quiet_retry_log():
        libraries = {"then": then(args.commit, Path(folder)), "now": backoff_iter}
        rows = compare(libraries, args.calls, args.rounds)
    print(
        f"backoff_iter {backoff_iter.__version__} against {args.commit}, Python {sys.version.split()[0]}"
    )
    print(f"{'form':22s} {'path':10s} {'ns then':>9s} {'ns now':>9s} {'now/then':>9s}")
    for form, path, before, after, ratio in rows:
        print(f"{form:22s} {path:10s} {before:9.0f} {after:9.0f} {ratio:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
