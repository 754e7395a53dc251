"""Draw docs/pictures/architecture.png: how one call flows through the retry core.

    python docs/architecture.py [OUT.png]

The boxes name the real objects and methods (``backoff_iter/_core.py``,
``_options.py``, ``parts.py``); CONTRIBUTING.rst and the design page show it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

OUT = Path(__file__).resolve().parent / "pictures" / "architecture.png"

# (x, y, width, height, title, lines, colour): the core's steps, top to bottom.
BOXES = {
    "policy": (
        0.5,
        8.6,
        6.0,
        1.1,
        "Policy (_options.py)",
        [
            "RetryOptions checked once, defaults in one table;",
            "_derive(): the parts in order, and the shortcuts",
        ],
        "#dbe9f6",
    ),
    "begin": (
        0.5,
        7.2,
        6.0,
        0.9,
        "begin(policy) -> Call (_core.py)",
        [
            "one run: attempt number, schedule, time slept, what parts took",
        ],
        "#dbe9f6",
    ),
    "admit": (
        0.5,
        5.6,
        6.0,
        1.1,
        "Call.admit(): before each attempt",
        [
            "part.before_attempt(call), in order: budget, breaker,",
            "throttle, rate limiter, your parts=, attempt timeout",
        ],
        "#fde9c9",
    ),
    "attempt": (
        0.5,
        4.3,
        6.0,
        0.8,
        "with attempt: your code",
        [
            "Attempt (_attempt.py): number, delay, elapsed, timeout; set_result()",
        ],
        "#e4f3df",
    ),
    "decide": (
        0.5,
        1.55,
        6.0,
        2.25,
        "Attempt.__exit__ -> Call.settle -> Call.decide()",
        [
            "on / on_result: success, error, failure or throttle",
            "part.after_attempt(...), in reverse order",
            "next delay; server hint (hints.sleep_for); deadline",
            "part.allow_retry(...), asked last",
            "-> the sleep, or None: the outcome stands",
        ],
        "#fde9c9",
    ),
    "hooks": (
        7.4,
        2.1,
        3.9,
        1.1,
        "hooks (instrument/)",
        [
            "retry / give_up / success / error",
            "default: a WARNING log per retry",
        ],
        "#efe2f5",
    ),
    "sleep": (
        0.5,
        0.25,
        6.0,
        0.85,
        "before_sleep hook; sleep (the loop's own, or no_sleep)",
        [
            "then the next attempt",
        ],
        "#e4f3df",
    ),
    "forms": (
        7.4,
        5.6,
        3.9,
        3.5,
        "Every form runs this loop",
        [
            "retrying / aretrying: for / async for",
            "@retry: a bare first try when",
            "  nothing needs the success",
            "RetryTransport (httpx)",
            "botocore_retries: settle() per try",
            "hedged / @hedge: attempts in",
            "  tasks, the same policy and parts",
            "overload simulator: admit()",
            "  and decide() in simulated time",
        ],
        "#f2f2f2",
    ),
}
ARROWS = [
    ("policy", "begin", ""),
    ("begin", "admit", ""),
    ("admit", "attempt", "admitted"),
    ("attempt", "decide", "outcome"),
    ("decide", "sleep", "a delay"),
    ("decide", "hooks", "events"),
]


def box(axes, x, y, width, height, title, lines, colour):
    axes.add_patch(
        FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.05", fc=colour, ec="#555555")
    )
    axes.text(x + 0.15, y + height - 0.25, title, fontsize=10.5, weight="bold", va="top")
    for i, line in enumerate(lines):
        axes.text(x + 0.15, y + height - 0.6 - 0.33 * i, line, fontsize=9, va="top")


def centre(name, side):
    x, y, width, height = BOXES[name][:4]
    return {
        "top": (x + width / 2, y + height + 0.05),
        "bottom": (x + width / 2, y - 0.05),
        "right": (x + width + 0.05, y + height / 2),
        "left": (x - 0.05, y + height / 2),
    }[side]


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    figure, axes = plt.subplots(figsize=(11.5, 10))
    for x, y, width, height, title, lines, colour in BOXES.values():
        box(axes, x, y, width, height, title, lines, colour)
    for start, end, label in ARROWS:
        if end == "hooks":
            a, b = centre(start, "right"), centre(end, "left")
        else:
            a, b = centre(start, "bottom"), centre(end, "top")
        axes.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=14, color="#333333"))
        if label:
            if end == "hooks":  # a horizontal arrow: its label above it
                axes.text(a[0] + 0.15, a[1] + 0.12, label, fontsize=8.5, style="italic")
            else:
                axes.text(a[0] + 0.1, (a[1] + b[1]) / 2, label, fontsize=8.5, style="italic")
    # The loop back: after the sleep, the next attempt is admitted again.
    x, y = centre("sleep", "left")
    top = centre("admit", "left")
    axes.add_patch(
        FancyArrowPatch(
            (x, y),
            top,
            connectionstyle="bar,fraction=-0.12",
            arrowstyle="-|>",
            mutation_scale=14,
            color="#333333",
        )
    )
    axes.text(0.05, 3.1, "next attempt", rotation=90, fontsize=8.5, style="italic")
    # A refusal ends the call with the part's error, its cause the call's last failure.
    axes.annotate(
        "a part refuses: the call ends with its error\n(__cause__: the call's last failure)",
        xy=centre("admit", "right"),
        xytext=(7.4, 4.4),
        fontsize=8.5,
        arrowprops={"arrowstyle": "-|>", "color": "#a33"},
        color="#a33",
    )
    axes.set_xlim(-0.3, 11.6)
    axes.set_ylim(0.0, 9.9)
    axes.axis("off")
    axes.set_title("One call through the retry core", fontsize=13, weight="bold")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
