"""Refuse a pipeline state whose counters cannot be this pipeline's, before it is loaded.

A state is checked against the pipeline's fingerprint, which catches a state of another
pipeline but not one edited by hand or damaged on the way: a negative position made a
``from_iterable`` source yield 103 items of 100, a negative take count 60 of 50, a concat
index of -1 replayed its last input. Every counter of the cursor tree (positions, offsets,
input indexes, passes, windows) and the epoch must be an integer >= 0; a user's own values
(a scan's accumulator, an iterable's own state) are not looked at. A source's position
past the end of its epoch (which would load as an empty epoch) is refused when the source
is started (:func:`check_position`), where the epoch's length is known.
"""

from __future__ import annotations

from typing import Any

from dload_arrow.errors import ConfigError

__all__ = ["PastEndError", "check_counters", "check_position"]

_COUNTERS = frozenset({"position", "offset", "index", "pass", "window", "epoch"})
_OPAQUE = frozenset({"acc", "iterable"})  # the user's values, as their code saved them


def _counter(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_counters(state: Any, where: str = "state") -> None:
    """Raise ValueError naming the first counter of ``state`` that is not an int >= 0."""
    if isinstance(state, list):
        for i, item in enumerate(state):
            check_counters(item, f"{where}[{i}]")
        return
    if not isinstance(state, dict):
        return
    for key, value in state.items():
        if key in _OPAQUE:
            continue
        path = f"{where}[{key!r}]"
        if key in _COUNTERS and not _counter(value):
            raise ConfigError(
                f"not a state of this pipeline: {path} is {value!r}, and a state's counters "
                "are integers >= 0 (was it edited or damaged?); pass what state_dict() "
                "returned"
            )
        check_counters(value, path)


class PastEndError(ValueError):
    """A loaded position lies past the end of its source's epoch."""


def check_position(position: int, end: int, what: str = "rows") -> None:
    """Raise ValueError when a loaded ``position`` lies past an epoch of ``end`` items."""
    if position > end:
        raise PastEndError(
            f"not a state of this pipeline: its position {position:,} is past the end of the "
            f"epoch ({end:,} {what}), so it would resume into an empty epoch (was it edited, "
            "or saved from another source?); pass what state_dict() returned"
        )
