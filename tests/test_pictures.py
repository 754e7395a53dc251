"""benchmarks/pictures.py, which makes the README's pictures, still runs and writes PNGs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_picture_script_writes_every_picture(tmp_path):
    """--quick into a fresh directory: each picture the README shows is a non-empty PNG."""
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "pictures.py"),
            "--quick",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    made = sorted(path.name for path in tmp_path.iterdir())
    committed = sorted(path.name for path in (ROOT / "benchmarks" / "pictures").iterdir())
    assert made == committed
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
