"""benchmarks/run.py --quick runs and prints every row (no timing is asserted)."""

from __future__ import annotations

import math
import subprocess
import sys
from importlib import util
from pathlib import Path

import pytest
from checks import unmeasured

ROOT = Path(__file__).resolve().parent.parent


def installed(module):
    try:
        return util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def rows(out):
    """The first cell of every table row (lines between a table's rules), to its cells."""
    found = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("=") and i + 2 < len(lines) and lines[i + 2].startswith("="):
            header = lines[i + 1]
            j = i + 3
            while j < len(lines) and lines[j].strip() and not lines[j].startswith("="):
                cells = [c for c in lines[j].split("  ") if c.strip()]
                found[(header.split()[0], cells[0].strip())] = [c.strip() for c in cells[1:]]
                j += 1
    return found


@pytest.mark.long_run
def test_quick_benchmark_prints_every_row(tmp_path):
    """Every strategy, every installed peer, every driver and the reST output appear as table rows."""
    rst = tmp_path / "bench.rst"
    readme = tmp_path / "README.rst"
    readme.write_text("Intro\n\n.. speed-start\n\n.. speed-end\n\nMore\n")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--quick",
            "--rst",
            str(rst),
            "--readme",
            str(readme),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=unmeasured(),
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    table = rows(out)
    for strategy in ("exponential", "full_jitter", "equal_jitter", "decorrelated"):
        assert ("strategy", strategy) in table
        assert ("contender", f"backoff_iter {strategy}") in table  # flat cost and memory
    for driver in (
        "bare call (no retry)",
        "hand-written try/except loop",
        "backoff_iter @retry",
        "backoff_iter @retry, TokenBucket",
        "backoff_iter retrying() loop",
        "backoff_iter module-level policy",
        "backoff_iter async @retry",
        "backoff_iter aretrying() loop",
    ):
        assert ("driver", driver) in table, driver
    peers = {
        "backoff": "backoff",
        "tenacity": "tenacity",
        "stamina": "stamina",
        "google-api-core Retry": "google.api_core",
    }
    for peer, module in peers.items():
        if installed(module):
            assert ("driver", peer) in table, peer
    assert ("module", "backoff_iter") in table and ("module", "tenacity") in table
    assert ("simulator", "backoff_iter overload") in table
    for form in ("sync", "async"):
        for stream in ("bare generator", "@retry", "@retry(resume=)"):
            assert ("stream", f"{form} {stream}") in table
    for path in ("module-level policy success", "breaker= success", "RetryBudget success"):
        assert ("path", path) in table, path  # issue 28's targets: benchmarks/costs.py
    assert ("path", "linear: make + 10 values") in table
    assert table[("study", "small study")][-1] == "— (full run)"  # its goal is the full study's
    assert "Machine:" in out and "Versions:" in out
    # What the run printed, from its first line: under CI's coverage a worker of the
    # study may print coverage's own warning before it.
    assert rst.read_text() == out[out.index("Machine:") :]
    # --readme: the targets the first table says were missed, and only those.
    first = out[out.index("**Pay only for what you use**") :].split("\n\n", 2)[1]
    missed = {path for (_, path), cells in rows(first).items() if cells[-1].startswith("MISSED")}
    written = readme.read_text()
    assert written.startswith("Intro\n\n.. speed-start\n") and written.endswith(
        ".. speed-end\n\nMore\n"
    )
    assert {path for _, path in rows(written)} == missed


def test_before_and_after_times_every_form_of_both_commits():
    """benchmarks/before_after.py takes issue 24's commit out of git and prints, for each
    form, success and per retry, the ns then and now and their ratio (no timing asserted).
    It needs the git history: the suite runs in a clone (CI's is a full one)."""
    history = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", "17c3e26^{commit}"], capture_output=True
    )
    if history.returncode != 0:
        pytest.skip("no git history with commit 17c3e26 here (an sdist, or a shallow clone)")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "before_after.py"),
            "--calls",
            "2",
            "--rounds",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("backoff_iter ") and " against 17c3e26, Python " in lines[0]
    found = {}
    for line in lines[2:]:
        form, path, ratio = line[:22].strip(), line[23:33].strip(), line.split()[-1]
        found[form, path] = float(ratio.rstrip("x"))
    forms = ("@retry", "retrying() loop", "module-level policy", "async @retry", "aretrying() loop")
    assert set(found) == {(f, p) for f in forms for p in ("success", "per retry")}
    # A number for each, not its sign: with 2 calls a retry's cost (a difference of two
    # timings) may come out below zero on a busy machine, as it did in CI twice.
    assert all(math.isfinite(ratio) for ratio in found.values())


def test_the_row_reader_sees_rows_not_headers():
    """rows() finds a driver's row, and not a name that only appears in a header or prose."""
    text = "Versions: tenacity 9\n\n=====  ==\ndriver  ns\n=====  ==\nstamina  5\n=====  ==\n"
    assert rows(text) == {("driver", "stamina"): ["5"]}
    one_row = "=====  ==\nstudy  s\n=====  ==\nsmall  5\n=====  ==\n\nprose\n"
    assert rows(one_row) == {("study", "small"): ["5"]}


def test_rst_output_replaces_only_the_marked_section(tmp_path):
    """--rst into a file with markers keeps everything outside them."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    target = tmp_path / "benchmarks.rst"
    target.write_text("intro\n.. benchmark-start\nold\n.. benchmark-end\noutro\n")
    run.write_rst(str(target), ["new table"])
    assert target.read_text() == (
        "intro\n.. benchmark-start\n\nnew table\n\n.. benchmark-end\noutro\n"
    )


def _run_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return run


def test_the_readme_block_lists_the_missed_targets_only_with_where_their_time_goes():
    """--readme writes the rows the run missed (path, reference, figure, target, where),
    after the machine and versions; a run that met every target says so."""
    run = _run_module()
    import costs

    met = costs.Row("fast path", "hand", 1.0, 1.0, "x", 2.0)
    missed = costs.Row("slow path", "google", 3.0, 1.0, "x", 2.0, where="_core.py:decide 40%")
    lines = run.missed_section([met, missed])
    assert lines[0].startswith("Written by ``python benchmarks/run.py --readme README.rst``")
    assert any(line.startswith("Machine:") for line in lines)
    assert rows("\n".join(lines)) == {
        ("path", "slow path"): ["google", "3.00x", "<= 2x", "_core.py:decide 40%"]
    }
    assert run.missed_section([met])[-1] == "Every target was met."


def test_the_readme_block_is_written_between_its_markers_or_not_at_all(tmp_path):
    """A file without the markers is left alone (not overwritten whole, as --rst may)."""
    run = _run_module()
    plain = tmp_path / "README.rst"
    plain.write_text("The README\n")
    with pytest.raises(SystemExit, match="speed-start"):
        run.write_rst(str(plain), ["table"], ".. speed-start", ".. speed-end", True)
    assert plain.read_text() == "The README\n"
    text = (ROOT / "README.rst").read_text(encoding="utf-8")
    assert text.count(".. speed-start") == 1 and text.count(".. speed-end") == 1
    assert text.index(".. speed-start") < text.index(".. speed-end")
    assert "--readme README.rst" in run.__doc__


def test_the_benchmarks_page_marks_the_one_section_that_run_py_rewrites():
    """docs/benchmarks.rst, the page run.py's usage names for --rst, has each marker once, in
    order (without them --rst would overwrite the whole page), and the tables between them."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert "--rst docs/benchmarks.rst" in run.__doc__
    text = (ROOT / "docs" / "benchmarks.rst").read_text(encoding="utf-8")
    assert text.count(".. benchmark-start") == 1 and text.count(".. benchmark-end") == 1
    assert text.index(".. benchmark-start") < text.index(".. benchmark-end")
    section = text.split(".. benchmark-start", 1)[1].split(".. benchmark-end", 1)[0]
    assert section.lstrip().startswith("Machine:")
    assert ("driver", "backoff_iter @retry") in rows(section)
