"""The API reference (docs/api/) documents every public name, from the docstrings: each name
of ``backoff_iter.__all__`` and of every public module's ``__all__``.

A re-exported name (``backoff_iter.retry`` is ``backoff_iter.drivers.retry``) is documented
once, under ``backoff_iter``.  The docs build itself (``sphinx-build -W -n``, in .ci/run)
checks that every documented name exists and every cross-reference resolves.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

import backoff_iter

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"

# What sets the module of the names that follow, and what documents a name.
MODULE = re.compile(r"^\.\. (?:py:)?(?:module|currentmodule|automodule):: *(\S+)")
DOCUMENTS = re.compile(
    r"^\.\. (?:auto(?:function|class|exception|data|decorator|attribute|method)|py:type)::"
    r" *([\w.]+)"
)


def public_modules() -> list[str]:
    """Every module of the package, subpackages' included, with no part of its
    name starting with an underscore."""
    return sorted(
        info.name
        for info in pkgutil.walk_packages(backoff_iter.__path__, "backoff_iter.")
        if not any(part.startswith("_") for part in info.name.split("."))
    )


def documented(pages: list[Path]) -> tuple[set[str], set[str]]:
    """(the full names an autodoc directive documents, the modules an automodule shows)."""
    names, modules = set(), set()
    for page in pages:
        current = "backoff_iter"
        for line in page.read_text(encoding="utf-8").splitlines():
            if found := MODULE.match(line):
                current = found.group(1)
                if "automodule" in line:
                    modules.add(current)
            elif found := DOCUMENTS.match(line):
                name = found.group(1)
                names.add(name if name.startswith("backoff_iter.") else f"{current}.{name}")
    return names, modules


def missing(module: ModuleType, package: ModuleType, names: set[str]) -> list[str]:
    """The names of *module*'s ``__all__`` that *names* does not document, neither under the
    module nor, for one *package* re-exports, under the package."""
    gone = []
    for name in module.__all__:
        if f"{module.__name__}.{name}" in names:
            continue
        exported = (
            module is not package
            and name in package.__all__
            and getattr(package, name) is getattr(module, name)
        )
        if exported and f"{package.__name__}.{name}" in names:
            continue
        gone.append(f"{module.__name__}.{name}")
    return gone


def test_the_reference_documents_every_name_of_the_package_and_its_public_modules():
    """Each name of backoff_iter.__all__, and of each public module's __all__, has its entry."""
    names, _ = documented(sorted(API.glob("*.rst")))
    assert names, "no autodoc directive found under docs/api/"
    gone = missing(backoff_iter, backoff_iter, names)
    for dotted in public_modules():
        gone += missing(importlib.import_module(dotted), backoff_iter, names)
    assert not gone, f"add these to the API reference (docs/api/): {gone}"


def test_the_reference_shows_every_public_module():
    """Each public module's docstring is on a page of the reference (its automodule)."""
    _, modules = documented(sorted(API.glob("*.rst")))
    assert set(public_modules()) | {"backoff_iter"} <= modules


def test_the_public_modules_are_the_ones_the_package_is_built_from():
    """The list the tests above walk holds the modules a reader imports (and no private one)."""
    modules = public_modules()
    assert {"backoff_iter.drivers", "backoff_iter.fleet", "backoff_iter.interop"} <= set(modules)
    assert not any(name.split(".")[1].startswith("_") for name in modules)


def test_a_name_missing_from_the_reference_is_reported(tmp_path):
    """An undocumented name is found, under its module or as a re-export; a documented one is not."""
    page = tmp_path / "page.rst"
    page.write_text(
        ".. currentmodule:: backoff_iter\n\n"
        ".. autofunction:: retry\n\n"
        ".. automodule:: backoff_iter.hints\n\n"
        ".. autofunction:: server_wait\n"
    )
    names, modules = documented([page])
    assert names == {"backoff_iter.retry", "backoff_iter.hints.server_wait"}
    assert modules == {"backoff_iter.hints"}
    drivers = importlib.import_module("backoff_iter.drivers")
    assert missing(drivers, backoff_iter, names) == [
        "backoff_iter.drivers.Attempt",
        "backoff_iter.drivers.ExceptionsAsDelays",
        "backoff_iter.drivers.aretrying",
        "backoff_iter.drivers.retrying",
    ]
    fake = SimpleNamespace(__name__="backoff_iter.fake", __all__=["retry", "server_wait"])
    fake.retry, fake.server_wait = backoff_iter.retry, None  # a re-export, and a name of its own
    assert missing(fake, backoff_iter, names) == ["backoff_iter.fake.server_wait"]


def shown(parameter: inspect.Parameter) -> str:
    """A parameter as the guides write it: its name, and its default as Python reads it."""
    if parameter.default is parameter.empty:
        return parameter.name
    default = "time.monotonic" if parameter.default is time.monotonic else repr(parameter.default)
    return f"{parameter.name}={default}"


@pytest.mark.parametrize("page", ["budgets.rst", "limiting.rst"])
def test_the_parts_guides_show_each_parts_whole_signature(page):
    """Each part's signature in the budgets and limiting guides is the class's own, every
    keyword included (limiting.rst left the breaker's and the throttle's store= out)."""
    text = " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())
    signatures = re.findall(r":class:`(\w+)\((.*?)\) <backoff_iter\.\1>`", text)
    assert len(signatures) == 3
    for name, written in signatures:
        words, star = [], False
        for parameter in inspect.signature(getattr(backoff_iter, name)).parameters.values():
            if parameter.kind is parameter.KEYWORD_ONLY and not star:
                words.append("*")
                star = True
            words.append(shown(parameter))
        assert written == ", ".join(words), name


def test_the_docs_extra_installs_every_peer_the_reference_documents_an_adapter_of():
    """``pip install '.[docs]'`` then the README's sphinx-build: autodoc imports each of
    interop's adapters, which exists only with its peer installed (httpx for
    RetryTransport...), so the docs extra names every peer of interop._PEERS."""
    import configparser

    from backoff_iter import interop

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    docs = config["options.extras_require"]["docs"].split()
    named = {re.match(r"[\w.-]+", requirement).group().lower() for requirement in docs}
    assert set(interop._PEERS.values()) <= named
