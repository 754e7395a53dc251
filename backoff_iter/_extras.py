"""The optional libraries: each is imported only where it is used, and is in
one of the package's extras (``pip install '.[plot]'`` in a checkout).  One
error, when one is missing, names what to install."""

from __future__ import annotations

__all__ = ["install_hint", "missing"]


def install_hint(package: str, extra: str) -> str:
    """How to install *package*, an optional library the extra *extra* holds.

    >>> install_hint("matplotlib", "plot")
    "pip install matplotlib (in backoff_iter's 'plot' extra)"
    """
    return f"pip install {package} (in backoff_iter's {extra!r} extra)"


def missing(what: str, package: str, extra: str, module: str | None = None) -> ModuleNotFoundError:
    """The error raised when *what* is used without *package* installed
    (imported as *module*, its name on the index by default).

    >>> error = missing("RedisStore", "redis", "redis")
    >>> print(error)
    RedisStore needs redis: pip install redis (in backoff_iter's 'redis' extra)
    >>> error.name
    'redis'
    """
    return ModuleNotFoundError(
        f"{what} needs {package}: {install_hint(package, extra)}", name=module or package
    )
