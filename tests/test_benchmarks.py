"""benchmarks/run.py --quick runs and prints every row (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from importlib import util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = {
    "backoff": "backoff",
    "tenacity": "tenacity",
    "stamina": "stamina",
    "google-api-core": "google.api_core",
}


def installed(module):
    try:
        return util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def test_quick_benchmark_prints_every_row(tmp_path):
    """Every strategy, every installed peer, every driver and the reST output appear."""
    rst = tmp_path / "bench.rst"
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--rst", str(rst)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for strategy in ("exponential", "full_jitter", "equal_jitter", "decorrelated"):
        assert f"\n{strategy} " in out
        assert f"backoff_iter {strategy}" in out  # flat-cost and memory rows
    for driver in (
        "bare call",
        "hand-written try/except loop",
        "backoff_iter @retry",
        "backoff_iter retrying() loop",
    ):
        assert driver in out
    for peer, module in PEERS.items():
        if installed(module):
            assert f"\n{peer}" in out or f"{peer} " in out
    assert "Machine:" in out and "Versions:" in out
    assert rst.read_text() == out


def test_rst_output_replaces_only_the_marked_section(tmp_path):
    """--rst into a file with markers keeps everything outside them."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    target = tmp_path / "README.rst"
    target.write_text("intro\n.. benchmark-start\nold\n.. benchmark-end\noutro\n")
    run.write_rst(str(target), ["new table"])
    assert target.read_text() == (
        "intro\n.. benchmark-start\n\nnew table\n\n.. benchmark-end\noutro\n"
    )
