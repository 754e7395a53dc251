"""The pictures: what they show, benchmarks/pictures.py, which makes them, and the docs
pages that show them."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from checks import unmeasured

from backoff_iter.cli import _pictures
from backoff_iter.overload import simulate_overload

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.long_run
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
        env=unmeasured(),
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


def test_one_attempt_is_marked_at_its_whole_number_alone(figures):
    """A schedule of one sleep (show -n 1, --until-elapsed 1) drew its attempt axis
    from -0.045 to 0.045 in fractions: the locator fills a view under 1 wide so."""
    _pictures.show("x.png", "t", [[1.0]], None)
    (figure,) = figures
    for axes in figure.axes:
        low, high = axes.get_xlim()
        assert [tick for tick in axes.get_xticks() if low <= tick <= high] == [0]


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


def storm_args(**changed):
    """The overload command's arguments that its picture reads, the small storm's."""
    args = argparse.Namespace(
        rate=50, capacity=60, spike=2, spike_at=10, spike_for=10, timeout=1, retries=3,
        base=0.05, cap=5, seed=1,
    )  # fmt: skip
    vars(args).update(changed)
    return args


def legend_labels(axes):
    """The texts of the legend of *axes*, in order."""
    return [text.get_text() for text in axes.get_legend().get_texts()]


def test_a_capacity_far_above_the_traffic_squashes_no_line(figures):
    """A server 1e7/s against 50 requests a second: each panel's axis fits the traffic
    (its highest count within the top tenth), the capacity still named in the legend."""
    runs = simulate_overload(["full_jitter"], ["none"], rate=50, capacity=1e7, seconds=30, seed=1)
    _pictures.overload("x.png", runs, storm_args(capacity=1e7))
    (figure,) = figures
    good, sent = figure.axes
    for axes, series in ((good, "goodput"), (sent, "attempts")):
        highest = max(*runs[0].series[series], *runs[0].series["arrivals"])
        low, high = axes.get_ylim()
        assert -0.1 * highest <= low <= 0 and highest <= high <= 1.1 * highest
    assert "capacity 1e+07/s, above the top" in legend_labels(good)


@pytest.mark.parametrize(
    "storm",
    [{"error_rate": 1.0}, {"error_rate": 0.5}, {"rate": 1e-3}],
    ids=["an outage", "half failing", "no requests"],
)
@pytest.mark.filterwarnings("error")  # matplotlib warns of an axis it had to widen itself
def test_every_count_drawn_lies_within_its_panel_under_a_capacity_far_above(figures, storm):
    """However the counts of a panel compare (no goodput in an outage, the arrivals above
    it, the attempts above both, no request at all), the axis under a capacity far above
    them shows every one: its top at the highest, above 0, its bottom at 0 or below."""
    options = {"rate": 50, "capacity": 1e7, "seconds": 30, "seed": 1, **storm}
    runs = simulate_overload(["full_jitter"], ["none"], **options)
    _pictures.overload("x.png", runs, storm_args(capacity=1e7))
    (figure,) = figures
    for axes in figure.axes:
        counts = [
            value
            for line in axes.get_lines()
            if not line.get_label().startswith("capacity")
            for value in line.get_ydata()
        ]
        low, high = axes.get_ylim()
        assert low <= 0 < high and max(counts) <= high <= 1.1 * max(1, max(counts))


def test_a_capacity_near_the_traffic_is_drawn_as_a_line(figures):
    """The server's capacity a little above the traffic: a line within the panel."""
    runs = simulate_overload(["none"], ["none"], rate=50, capacity=60, seconds=30, seed=1)
    _pictures.overload("x.png", runs, storm_args())
    (figure,) = figures
    for axes in figure.axes:
        assert axes.get_ylim()[0] < 60 < axes.get_ylim()[1]
    assert "capacity 60/s" in legend_labels(figure.axes[0])


@pytest.mark.parametrize("changed", [{"spike": 1}, {"spike_for": 0}, {"spike_at": 1000}])
def test_no_spike_shaded_where_the_run_had_none(figures, changed):
    """A spike of x1, of no length or after the run's end is not shaded, nor named in
    the legend, and the time axis spans the run, not the spike's times."""
    options = {"rate": 50, "capacity": 60, "seconds": 30, "seed": 1, **changed}
    runs = simulate_overload(["none"], ["none"], **options)
    _pictures.overload("x.png", runs, storm_args(**changed))
    (figure,) = figures
    for axes in figure.axes:
        assert axes.get_xlim()[1] < 32
    assert not [label for label in legend_labels(figure.axes[0]) if "spike" in label]


def test_a_spike_is_shaded_over_its_seconds(figures):
    """The spike of the default storm is shaded from its start to its end, and named."""
    runs = simulate_overload(["none"], ["none"], rate=50, capacity=60, seconds=30, seed=1)
    _pictures.overload("x.png", runs, storm_args())
    (figure,) = figures
    for axes in figure.axes:
        [shade] = axes.patches
        assert shade.get_x() == 10 and shade.get_width() == 10
    assert "spike ×2" in legend_labels(figure.axes[0])


def test_a_spike_past_the_runs_end_is_shaded_to_the_end(figures):
    """A spike lasting beyond the run (the library runs one; the command refuses it) is
    shaded to the run's end: the time axis spans the run, not the spike."""
    runs = simulate_overload(
        ["none"], ["none"], rate=50, capacity=60, spike_for=1000, seconds=30, seed=1
    )
    _pictures.overload("x.png", runs, storm_args(spike_for=1000))
    (figure,) = figures
    for axes in figure.axes:
        [shade] = axes.patches
        assert shade.get_x() == 10 and shade.get_width() == 20
        assert axes.get_xlim()[1] < 32


def test_the_architecture_picture_is_drawn_by_its_script(tmp_path):
    """docs/architecture.py writes the picture CONTRIBUTING and the design page show."""
    out = tmp_path / "architecture.png"
    subprocess.run(
        [sys.executable, str(ROOT / "docs" / "architecture.py"), str(out)],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
