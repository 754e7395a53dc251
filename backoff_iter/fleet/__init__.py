"""Parts shared by a fleet of processes, through Redis."""

from __future__ import annotations

from ._redis import RedisStore
from ._shared import _SharedState as _SharedState  # for simulations and tests
from ._store import Store

__all__ = ["RedisStore", "Store"]
