"""What a store is to the parts that count through it.

``TokenBucket(store=...)`` (and the other parts' ``store=``) asks the store
for the class to make (:meth:`Store.fleet_class`), so the parts' modules
never import the fleet: the fleet imports them.
"""

from __future__ import annotations

from backoff_iter import _checks

from ._breakers import BREAKERS
from ._budgets import BUDGETS
from ._member import Member

__all__ = ["Store"]

#: Each part that takes store=, by its in-process class: its fleet class, the
#: decisions an inline store exchanges before and the events it exchanges after.
PARTS: dict[type, tuple[type, tuple[str, ...], tuple[str, ...]]] = {**BUDGETS, **BREAKERS}
# The same entries by fleet class, so that a fleet class called directly finds its own.
_BY_CLASS = {entry[0]: entry for entry in PARTS.values()}


class Store:
    """Where fleet parts keep what their processes share: a
    :class:`~backoff_iter.fleet.RedisStore` (or, in simulations, the
    in-process ``_SharedState``).  A store serves one part."""

    __slots__ = ("__weakref__",)

    def fleet_class(self, cls: type) -> type:
        """The class a part of class *cls* is made of when it counts through
        this store: what ``TokenBucket(store=store)`` (``RetryBudget``,
        ``RetryQuota``, ``CircuitBreaker``, ``AdaptiveThrottle``) asks; an
        argument error naming ``store`` for any other class."""
        entry = PARTS.get(cls) or _BY_CLASS.get(cls)
        if entry is None:
            names = ", ".join(kind.__name__ for kind in PARTS)
            raise _checks.ArgumentTypeError(
                "store", f"store= works with {names}, not {cls.__name__}"
            )
        return self._variant(*entry)

    def _variant(self, cls: type, before: tuple[str, ...], after: tuple[str, ...]) -> type:
        """The fleet class *cls* as this store runs it."""
        return cls

    def _attach(self, member: Member, window: float) -> None:
        """Link a new part (*window*: its counting window, in seconds, or 0)."""
        raise NotImplementedError


def variant(cls: type, made: type) -> type:
    """Register *made*, a store's own variant of the fleet class *cls*: the
    variant called directly with a store finds its entry too."""
    _BY_CLASS[made] = (made, *_BY_CLASS[cls][1:])
    return made
