"""What a lookup's misses and surprises say: ints taken as positions where the keys are
numbers as text, a stored key in another Unicode form, a long key cut in a message (QA
lookup60). Used by ``lookup.RandomAccess``."""

from __future__ import annotations

import unicodedata
import warnings
from typing import TYPE_CHECKING

from dload_arrow.errors import MissingKeyError, user_stacklevel

if TYPE_CHECKING:
    from dload_arrow.read.lookup import RandomAccess
    from dload_arrow.store.manifest import Manifest

__all__ = ["cut", "unicode_twin", "warn_positions"]

_SHOWN_KEY = 200  # a longer key is cut in a miss (a 5 KB key was echoed whole)


def cut(key: str) -> str:
    """``key`` as a message shows it: at most ``_SHOWN_KEY`` characters, then its length."""
    return key if len(key) <= _SHOWN_KEY else f"{key[:_SHOWN_KEY]}... ({len(key)} chars)"


def warn_positions(manifest: Manifest) -> None:
    """Warn that a take() of ints reads positions when the keys of the dataset look like
    numbers as text (a table keyed by its int id column: take(ids) gave other items' rows);
    judged from the shards' key bounds, a heuristic, and not for generated keys (12-digit row
    numbers, whose positions are their keys). The caller says it once per dataset object."""
    bounds = [k for s in manifest.shards for k in (s.key_min, s.key_max)]
    generated = all(len(k) == 12 for k in bounds)
    if bounds and not generated and all(k.isascii() and k.isdigit() for k in bounds):
        warnings.warn(
            f"take() reads ints as positions, and the keys of this dataset look like numbers "
            f"as text ({cut(bounds[0])!r} ... {cut(bounds[-1])!r}): to take by key, pass them "
            "as text (ds.take([str(i) for i in ids]))", stacklevel=user_stacklevel())


def unicode_twin(ra: RandomAccess, key: str) -> str:
    """A stored key that differs from ``key`` only in Unicode normalization: the two print
    the same ('café' composed, stored decomposed). One more lookup, for a non-ASCII key only
    (a miss with a default, or ``in``, pays it too); "" when there is none."""
    if key.isascii() or len(key) > _SHOWN_KEY:
        return ""
    forms = sorted({unicodedata.normalize(f, key) for f in ("NFC", "NFD")} - {key})
    found = [f for f in forms if _stored(ra, f)]
    return "" if not found else (
        f"; the stored key {found[0]!a} differs from {key!a} only in Unicode normalization "
        "(keys compare exactly: unicodedata.normalize('NFC', k) or "
        "unicodedata.normalize('NFD', k) finds the stored spelling)")


def _stored(ra: RandomAccess, key: str) -> bool:
    """Whether ``key`` is stored: read, not only located (sorted keys locate where a key would
    be), its own miss looking for no twin (``ra._probing``, per thread)."""
    ra._probing.on = True
    try:
        ra.take([key], [])
        return True
    except MissingKeyError:
        return False
    finally:
        ra._probing.on = False
