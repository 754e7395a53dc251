"""Sphinx configuration of the documentation site (docs/), on the furo theme.

Built as CI builds it, with warnings as errors and every cross-reference checked::

    sphinx-build -W -n -b html docs docs/_build/html

The API reference documents the installed package (``pip install -e '.[docs]'``
while editing it), as the test suite tests the installed package.  Nothing is
downloaded at build time: no intersphinx.
"""

from __future__ import annotations

import builtins
import re
import sys

import backoff_iter

project = "backoff_iter"
author = "The backoff_iter developers"
copyright = "The backoff_iter developers"
release = backoff_iter.__version__
version = release

extensions = ["sphinx.ext.autodoc"]
exclude_patterns = ["_build"]

html_theme = "furo"
html_title = f"backoff_iter {release}"

# Signatures as written in the source (`clock=time.monotonic`, not a repr), one
# parameter a line once a signature is longer than this.
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
python_maximum_signature_line_length = 88

# Every cross-reference is checked (-n), and a broken one fails the build (-W).
# Without intersphinx, references to Python's own objects and to the peers'
# (the type hints name collections.abc.Callable, httpx.Response, redis.Redis
# ...) have no target here: they are ignored by what they name, and only
# those.  A reference to an object of backoff_iter must resolve.
nitpicky = True
_STDLIB = sorted(getattr(sys, "stdlib_module_names", ()))  # Python 3.10+; CI builds on 3.11
_PEERS = [
    "backoff",
    "google",
    "httpx",
    "matplotlib",
    "more_itertools",
    "opentelemetry",
    "prometheus_client",
    "redis",
    "requests",
    "tenacity",
    "trio",
    "typing_extensions",
    "urllib3",
]
_OUTSIDE = "|".join(re.escape(name) for name in [*_STDLIB, *_PEERS])
nitpick_ignore_regex = [(r"py:.*", rf"(?:{_OUTSIDE})(?:\..+)?")]
nitpick_ignore = [
    # Builtins (float, int, Exception, ...), as the hints and docstrings name them.
    *((f"py:{role}", name) for name in dir(builtins) for role in ("class", "exc", "func", "obj")),
    # The type variables of generic signatures (retry, hedge, set_result): no page of their own.
    ("py:class", "P"),
    ("py:class", "R"),
    ("py:class", "backoff_iter._attempt.T"),
    ("py:class", "backoff_iter.schedules.K"),
    # What type checkers see a bare @retry make of a function of no arguments
    # returning numbers (a Protocol of theirs only, never made at runtime).
    ("py:class", "FunctionOrDelays"),
    ("py:class", "Numbers"),
    # The alias of what CircuitBreaker's break_duration takes, as its attribute's hint
    # names it (the class's signature spells it out).
    ("py:class", "BreakDurations"),
    # Peers' classes that the hints import only for type checking, so that
    # they appear by their bare names (autodoc_type_aliases would qualify
    # them, but Sphinx 9 prints such an alias inside a union as its repr).
    *(
        ("py:class", name)
        for name in [
            "BaseHTTPResponse",  # urllib3
            "CollectorRegistry",  # prometheus_client
            "MeterProvider",  # opentelemetry.metrics
            "TracerProvider",  # opentelemetry.trace
            "stop_base",  # tenacity.stop
            "wait_base",  # tenacity.wait
        ]
    ),
]


def _no_signature_for_protocols(app, what, name, obj, options, signature, return_annotation):
    """A Protocol (Budget, RateLimiter, ...) is implemented, never called: no ``(*args, **kwargs)``."""
    if what == "class" and getattr(obj, "_is_protocol", False):
        return "", None
    return None


def setup(app):
    app.connect("autodoc-process-signature", _no_signature_for_protocols)
