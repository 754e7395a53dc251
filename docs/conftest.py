"""The docs' doctests: the helpers their examples name (a local server that cuts its
answers, on 127.0.0.1 only) are the tests' own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from aws_server import AwsServer  # noqa: E402 - the tests' folder, added above
from streaming_server import cutting_server  # noqa: E402


@pytest.fixture(autouse=True)
def helpers(doctest_namespace):
    """cutting_server(body=..., lines=..., cuts=2): a server whose first answers stop short;
    aws_server(): a DynamoDB-like server answering its ``script`` of errors, then successes."""
    doctest_namespace["cutting_server"] = cutting_server
    doctest_namespace["aws_server"] = AwsServer
