"""The one hook between a part and a fleet store: a part made with
``store=`` asks the store which class to be (the budgets, the breaker and
the throttle alike), so none of their modules imports the fleet."""

from __future__ import annotations

from typing import TypeVar, cast

from . import _checks

_P = TypeVar("_P")


def fleet_class(cls: type[_P], store: object) -> type[_P]:
    """The class a *cls* made with ``store=store`` is: what the store's
    :meth:`~backoff_iter.fleet.Store.fleet_class` says; an argument error
    naming ``store`` when *store* is not a store."""
    ask = getattr(type(store), "fleet_class", None)
    if ask is None:
        raise _checks.ArgumentTypeError(
            "store", f"store must be a backoff_iter.fleet.RedisStore, got {_checks.shown(store)}"
        )
    return cast("type[_P]", ask(store, cls))
