"""The optional libraries: each is imported only where it is used, and is in
one of the package's extras (``pip install '.[plot]'`` in a checkout).  One
error, when one is missing, names what to install."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["install_hint", "missing"]


def install_hint(package: str, extra: str) -> str:
    """How to install *package*, an optional library the extra *extra* holds.

    >>> install_hint("matplotlib", "plot")
    "pip install matplotlib (in backoff_iter's 'plot' extra)"
    """
    return f"pip install {package} (in backoff_iter's {extra!r} extra)"


def missing(
    what: str, package: str, extra: str, error: ImportError, module: str | None = None
) -> NoReturn:
    """Raise, for the *error* that importing *package* (as *module*; by
    default its name on the index) raised, the error saying *what* needs it
    and how to install it; or *error* itself when the module missing is
    another (one *package* needs: a broken install, not a missing extra).

    >>> try:
    ...     import redis_not_installed
    ... except ImportError as error:
    ...     missing("RedisStore", "redis", "redis", error, "redis_not_installed")
    Traceback (most recent call last):
    ModuleNotFoundError: RedisStore needs redis: pip install redis (in backoff_iter's 'redis' extra)
    """
    module = module or package
    if (error.name or "").partition(".")[0] != module:
        raise error
    raise ModuleNotFoundError(
        f"{what} needs {package}: {install_hint(package, extra)}", name=module
    ) from error
