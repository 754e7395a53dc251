"""The pictures: what they show, benchmarks/pictures.py, which makes them, and the docs
pages that show them."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from backoff_iter.cli import _pictures
from backoff_iter.overload import simulate_overload

ROOT = Path(__file__).resolve().parent.parent


def test_the_picture_script_writes_every_picture(tmp_path):
    """--quick into a fresh directory: each picture the docs show is a non-empty PNG."""
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


def shown_on_the_docs_pages():
    """{picture file: the docs pages showing it}, from their image directives."""
    shown = {}
    for page in sorted((ROOT / "docs").rglob("*.rst")):
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith(".. image::"):
                path = (page.parent / line.split("::", 1)[1].strip()).resolve()
                shown.setdefault(path, []).append(page.name)
    return shown


def test_every_picture_is_shown_on_a_docs_page_and_every_image_shown_exists():
    """The committed pictures (benchmarks' and the docs' own) and the image directives name the same files."""
    committed = set((ROOT / "benchmarks" / "pictures").resolve().iterdir())
    committed |= set((ROOT / "docs" / "pictures").resolve().iterdir())
    shown = shown_on_the_docs_pages()
    assert set(shown) == committed, sorted(path.name for path in set(shown) ^ committed)


# -- what the pictures show (drawn in this process, looked at before saving) -----------------


@pytest.fixture
def figures(monkeypatch):
    """The figures the picture functions would save, laid out as saved, then closed."""
    from matplotlib import pyplot

    made = []

    def keep(figure, path):
        figure.tight_layout()
        figure.canvas.draw()
        made.append(figure)

    monkeypatch.setattr(_pictures, "_save", keep)
    yield made
    for figure in made:
        pyplot.close(figure)


def overlaps(one, other):
    """Two display boxes share some area."""
    return one.x0 < other.x1 and other.x0 < one.x1 and one.y0 < other.y1 and other.y0 < one.y1


@pytest.mark.parametrize("attempts", [3, 6, 10, 15, 22, 60])
def test_attempts_are_marked_at_whole_numbers(figures, attempts):
    """The attempt axis has ticks at whole attempts only (never 2.5, 7.5, ...)."""
    _pictures.show("x.png", "t", [[float(i) for i in range(1, attempts + 1)]], None)
    (figure,) = figures
    for axes in figure.axes:
        low, high = axes.get_xlim()
        shown = [tick for tick in axes.get_xticks() if low <= tick <= high]
        assert len(shown) >= 2 and all(tick == int(tick) for tick in shown), shown


def test_each_panel_names_its_own_line_and_no_legend_covers_data(figures):
    """The sleep panel's reference line is the schedule, the lower one is the time it slept;
    each legend lies beside its panel, not on it."""
    schedules = [[1.0, 2.0, 4.0], [0.5, 1.5, 3.0], [1.5, 2.5, 3.5]]
    _pictures.show("x.png", "t", schedules, ("exponential(base=1)", [1.0, 2.0, 4.0]))
    (figure,) = figures
    top, bottom = figure.axes
    top_labels = [text.get_text() for text in top.get_legend().get_texts()]
    bottom_labels = [text.get_text() for text in bottom.get_legend().get_texts()]
    assert "exponential(base=1), for reference" in top_labels
    assert "time slept by exponential(base=1)" in bottom_labels
    assert "5-95% of the 3 schedules" in top_labels
    slept_by = next(line for line in bottom.get_lines() if line.get_label().startswith("time"))
    assert list(slept_by.get_ydata()) == [1.0, 3.0, 7.0]
    for axes in (top, bottom):
        assert not overlaps(axes.get_legend().get_window_extent(), axes.get_window_extent())


def test_the_overload_legend_lies_beside_the_data(figures):
    """The storm's legend (six runs and three guides) covers none of either panel."""
    args = argparse.Namespace(
        rate=50, capacity=60, spike=2, spike_at=10, spike_for=10, timeout=1, retries=3,
        base=0.05, cap=5, seed=1,
    )  # fmt: skip
    runs = simulate_overload(["none"], ["none", "token_bucket"], rate=50, capacity=60, seconds=30)
    _pictures.overload("x.png", runs, args)
    (figure,) = figures
    legend = figure.axes[0].get_legend().get_window_extent()
    for axes in figure.axes:
        assert not overlaps(legend, axes.get_window_extent())


def test_the_architecture_picture_is_drawn_by_its_script(tmp_path):
    """docs/architecture.py writes the picture CONTRIBUTING and the design page show."""
    out = tmp_path / "architecture.png"
    subprocess.run(
        [sys.executable, str(ROOT / "docs" / "architecture.py"), str(out)],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
