"""Human byte sizes: parse ``60GB``/``512MiB`` and print ``1.2 GB``."""

from __future__ import annotations

import datetime
import math
import re

from dload_arrow.errors import ConfigError

__all__ = ["BUDGET_WAYS", "format_bytes", "parse_duration", "parse_size", "plural"]

# every way to set the cache budget, for the errors that ask to raise it
BUDGET_WAYS = "--cache-budget, DLOAD_CACHE_BUDGET, cache_budget= or cache_budget in dload.toml"

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12, "p": 10**15, "pb": 10**15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}
_DURATION = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_UNIT_WORDS = {w + p: u for u, words in {"s": ("sec", "second"), "m": ("min", "minute"),
                                          "h": ("hr", "hour"), "d": ("day",),
                                          "w": ("week",)}.items()
               for w in words for p in ("", "s")}


def parse_size(value: str | int | float, what: str = "size") -> int:
    """Bytes from an int or a string such as ``60GB``, ``1.5 GiB`` or ``4096``."""
    if isinstance(value, bool):
        raise ConfigError(f"{what} {value!r} is not a size; use e.g. '60GB' or 1000000")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ConfigError(f"{what} {value!r} is not a size; use e.g. '60GB' or 1000000")
        if value < 0:
            raise ConfigError(f"{what} {value!r} must not be negative")
        if isinstance(value, float) and not value.is_integer():  # 1.5 meant 1.5 GB, not 1 B
            raise ConfigError(f"{what} {value!r} is a fraction of a byte; give whole bytes or "
                              "text with a unit such as '1.5GB'")
        return int(value)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigError(
            f"{what} {value!r} is not a size; use a number with an optional unit "
            "such as '512MiB', '60GB' or '2TB'"
        )
    if _UNITS[m.group(2).lower()] == 1 and "." in m.group(1) and float(m.group(1)) % 1:
        raise ConfigError(f"{what} {value!r} is a fraction of a byte; give whole bytes or a "
                          f"unit such as '{m.group(1)}GB'")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_duration(value: str | int | float | datetime.timedelta,
                   what: str = "duration") -> float:
    """Seconds from a number, a ``timedelta``, or text such as ``30s``, ``2h``, ``7d`` or
    ``1 hour``."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{what} {value!r} must be a number of seconds >= 0, or text "
                              "such as '30s', '2h' or '7d'")
        return float(value)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", str(value).lower())
    unit = _UNIT_WORDS.get(m.group(2), m.group(2)) if m else None
    if not m or unit not in _DURATION:
        raise ConfigError(f"{what} {value!r} is not a duration; use e.g. '30s', '2h', '7d' "
                          "or '1 hour' (in Python also seconds or a datetime.timedelta)")
    return float(m.group(1)) * _DURATION[unit]


def format_bytes_up(n: float) -> str:
    """As :func:`format_bytes`, rounded up: a size given as "at least" must suffice when it
    is typed back (``1001818`` -> ``'1.1 MB'``, not ``'1.0 MB'``)."""
    units = ("B", "KB", "MB", "GB", "TB")
    whole = max(math.ceil(n), 0)
    i = 0
    while i < len(units) - 1 and whole >= 1000 ** (i + 1):
        i += 1
    if i == 0:
        return f"{whole} B"
    tenths = -(-whole * 10 // 1000 ** i)  # whole numbers: no float rounds it down
    if tenths >= 10_000 and i < len(units) - 1:
        return f"1.0 {units[i + 1]}"
    return f"{tenths // 10}.{tenths % 10} {units[i]}"


def format_bytes(n: float) -> str:
    """``1234567`` -> ``'1.2 MB'``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def plural(n: int, word: str) -> str:
    """A count for people: ``1 shard``, ``2 shards``."""
    return f"{n} {word}{'' if n == 1 else 's'}"
