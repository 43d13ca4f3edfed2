"""Whole-store aggregates cached per store generation (issue 19).

Why: Streamlit reruns a page on every widget interaction, and at team scale (millions of
grade events) the Home, Agreement and Runs & pool pages each spent seconds to a minute
re-deriving the same figures from unchanged data. A value here is kept under its name and
arguments together with :meth:`Store.generation` (the store-wide write and event sequences'
last values, so a write by any process counts); it is recomputed only when the store moved
on since. One process
serves every browser session, so every session shares one copy.

Callers check the user's role *before* asking (the cached value is the same for everyone
who may see it) and must not mutate what they get back.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from golden_store.db.store import Store

T = TypeVar("T")

_values: dict[tuple, tuple[tuple[int, int], Any]] = {}
_locks: dict[tuple, threading.Lock] = {}
_guard = threading.Lock()
_tokens = itertools.count(1)


def _token(store: Store) -> int:
    """A number for this store handle that is never reused (``id()`` is, after a close), so a
    reopened store never meets the values of the handle before it."""
    with _guard:
        tok = getattr(store, "_cache_token", None)
        if tok is None:
            tok = next(_tokens)
            store._cache_token = tok  # type: ignore[attr-defined]
        return tok


def cached(store: Store, name: str, args: tuple[Hashable, ...], compute: Callable[[], T]) -> T:
    """``compute()`` for (store, name, args), reused until the store's generation changes.
    Concurrent callers for the same key wait for one computation instead of each running
    it (a 20 s aggregate started by five sessions at once would otherwise run five times)."""
    key = (str(store.path), _token(store), name, args)
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        gen = store.generation()
        hit = _values.get(key)
        if hit is not None and hit[0] == gen:
            return hit[1]
        value = compute()
        # the generation read before computing: a write racing the computation makes the
        # next call recompute rather than serve a value older than its key
        _values[key] = (gen, value)
        for other in [k for k in _values if k[0] == key[0] and k[1] != key[1]]:
            _values.pop(other, None)  # a closed handle's values on the same file
        return value


def clear() -> None:
    """Forget every cached value (tests; a store reopened under the same path)."""
    with _guard:
        _values.clear()
        _locks.clear()
