"""show --plot fits its log axes to what it draws (the median, the 5-95% band, the reference),
not to every sample: full jitter's rare sleeps near zero, never drawn, used to stretch the
sleep axis down to 1e-5 s and leave half the panel empty."""

from __future__ import annotations

import pytest

from backoff_iter.cli import _pictures


@pytest.fixture
def drawn(monkeypatch):
    """The figures show() would save, drawn but not written, then closed."""
    from matplotlib import pyplot

    made = []
    monkeypatch.setattr(_pictures, "_save", lambda figure, path: made.append(figure))
    yield made
    for figure in made:
        pyplot.close(figure)


def test_a_sample_far_outside_the_band_does_not_stretch_the_axes(drawn):
    """100 schedules between 0.1 s and 1 s, one at 1e-6 s and one at 1e6 s: each panel's
    limits stay within a factor 1.5 of the band, the median and the reference."""
    schedules = [[0.1 + 0.009 * k, 0.2 + 0.008 * k, 0.3 + 0.007 * k] for k in range(98)]
    schedules += [[1e-6] * 3, [1e6] * 3]
    _pictures.show("x.png", "t", schedules, ("exponential(base=0.2)", [0.2, 0.4, 0.8]))
    (figure,) = drawn
    top, bottom = figure.axes
    low, high = top.get_ylim()
    assert 0.1 / 1.5 - 1e-9 <= low <= 0.11 and 1.2 <= high <= 1.5 * 1.2, (low, high)
    low, high = bottom.get_ylim()
    assert 0.1 / 1.5 - 1e-9 <= low <= 0.11 and 2.0 <= high <= 1.5 * 3.0, (low, high)


def test_one_schedule_is_fitted_to_its_own_values(drawn):
    """Without a band, the schedule and the reference set the limits."""
    _pictures.show("x.png", "t", [[1.0, 2.0, 4.0]], ("exponential(base=0.5)", [0.5, 1.0, 2.0]))
    (figure,) = drawn
    assert figure.axes[0].get_ylim() == pytest.approx((0.5 / 1.5, 4.0 * 1.5))
    assert figure.axes[1].get_ylim() == pytest.approx((0.5 / 1.5, 7.0 * 1.5))


def test_a_schedule_of_zeros_is_drawn_on_a_linear_axis_without_a_warning(drawn):
    """show --cap 0: every sleep is 0 s, which no log axis shows (matplotlib warned that
    it cannot be log-scaled and drew an empty panel); a linear axis draws the zeros."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _pictures.show("x.png", "t", [[0.0, 0.0, 0.0]], ("exponential(base=0)", [0.0] * 3))
    (figure,) = drawn
    assert [axes.get_yscale() for axes in figure.axes] == ["linear", "linear"]
    assert all(line.get_ydata().tolist() == [0.0] * 3 for line in figure.axes[0].get_lines())
