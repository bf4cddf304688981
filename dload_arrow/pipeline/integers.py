"""Integer arguments of the pipeline operators, numpy integers included.

``batch(np.int64(32))`` or ``mix(window=n)`` with ``n`` from a numpy computation is an int to
the user; the operators keep their own messages for wrong values and store a plain ``int`` (a
numpy scalar would change the fingerprint's JSON and overflow int64 arithmetic silently).
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["integer"]


def integer(value: Any) -> int | None:
    """``value`` as a plain int when it is an integer (an int, a numpy integer, any type with
    ``__index__``), else None; a bool is not a count, so it is None too."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        return None
    return operator.index(value)
