"""Whether a ``.tsv`` quotes its values as CSV does, judged from its first MiB.

IANA's TSV has no quoting: a quote is text. NLP files rely on that (unbalanced quotes in
GLUE/SST-2 sentences, a lone ``"`` token in CoNLL files); read with CSV quoting, their quotes
were dropped, rows merged and labels lost (QA review59b/e/f). R's ``write.table`` and pandas'
``to_csv(sep="\\t")`` do quote (R every name and text, with ``\\"`` inside; pandas a value
holding a tab, a line break or a quote, doubling it); read without quoting, their values
kept the quote marks or split rows.

Both readings of the sample are tried with Python's csv module, a row a line: the one whose
rows all have the header's width wins; where both do (one-column files, or no quoted tab),
quoting needs positive evidence: R's quoted header, or a value quoted as a whole with a doubled
quote inside. Otherwise no quoting. Heuristics by design: a file they misjudge is refused by
its row widths where the readings differ, and the error says how to read it the other way.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
from typing import Any

from dload_arrow.ingest.location import is_remote, local_path
from dload_arrow.ingest.table_stream import open_table_file

__all__ = ["tsv_quoting"]

_SAMPLE = 1 << 20
_CACHE: dict[tuple[Any, ...], str | None] = {}


def tsv_quoting(path: str, endpoint_url: str | None = None) -> str | None:
    """None (no quoting), ``"double"`` (CSV quoting, ``""`` inside a value) or ``"escape"``
    (R's ``\\"``) for the .tsv ``path``; kept per file and its size (and, locally, its time):
    a commit asks up to four times, and a remote sample is one ranged GET (QA review59g: an
    object rewritten meanwhile is looked at again)."""
    f, size = open_table_file(path, endpoint_url)
    with f:
        key: tuple[Any, ...] = (path, endpoint_url, size)
        if not is_remote(path):
            with contextlib.suppress(OSError):
                key += (os.stat(local_path(path)).st_mtime_ns,)
        if key not in _CACHE:
            head = f.read(_SAMPLE)
            if len(_CACHE) > 256:
                _CACHE.clear()
            _CACHE[key] = _judge(head, complete=len(head) < _SAMPLE)
    return _CACHE[key]


def _judge(head: bytes, complete: bool) -> str | None:
    text = head.decode("utf-8", "replace").removeprefix("\ufeff")
    if not complete:  # the last line may be cut: leave it out
        text = text[: text.rfind("\n") + 1]
    lines = text.splitlines()
    if not lines or '"' not in text:
        return None
    names = lines[0].split("\t")
    r_header = all(len(n) >= 2 and n[0] == n[-1] == '"' for n in names)
    # R's default qmethod="escape" writes a quote inside a value as \" (not before a tab or a
    # line end: that is a value ending in a backslash, "C:\temp\")
    escape = r_header and re.search(r'\\"[^\t\r\n]', text) is not None
    bare = _widths(text, quoting=False, cut=not complete)
    quoted = _widths(text, quoting=True, escape=escape, cut=not complete)
    width = len(names)
    bare_ok = bool(bare) and all(w == width for w in bare)
    quoted_ok = bool(quoted) and all(w == width for w in quoted)
    if bare_ok and not quoted_ok:
        return None
    way = "escape" if escape else "double"
    if quoted_ok and not bare_ok:
        return way
    if quoted_ok and (r_header or _doubled(lines[1:])):
        return way
    return None


def _widths(text: str, quoting: bool, escape: bool = False, cut: bool = False) -> list[int]:
    """The field count of each row of ``text`` read one way (the header's first; with
    ``cut``, the sample's last row too, which a quoted line break may have cut)."""
    if quoting:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t",
                            doublequote=not escape, escapechar="\\" if escape else None)
    else:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t",
                            quoting=csv.QUOTE_NONE)
    try:
        widths = [len(row) for row in reader if row][1:]
    except csv.Error:  # a quote that never closes in the sample, for one
        return []
    return widths[:-1] if cut else widths


def _doubled(lines: list[str]) -> bool:
    """Whether a value is quoted whole with a doubled quote inside (pandas writes
    ``say "hi"`` so)."""
    for line in lines:
        for f in line.split("\t"):
            inner = f[1:-1]
            if len(f) >= 4 and f[0] == f[-1] == '"' and '""' in inner and \
                    '"' not in inner.replace('""', ""):
                return True
    return False
