"""Codes a CSV writes as digits (``01234``, ``007``, ``+4930123``), which pyarrow's type
inference reads as numbers: the leading zeros or the sign are lost for good, without a word
(QA eng58). The first block of a file, where types are inferred, is read again as text for
its numeric columns, and a column whose text a number cannot give back is warned of, with
the way to keep it as text. A file whose one column's name holds ``;`` or tabs is warned of
too: it was written with another delimiter."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.errors import user_stacklevel
from dload_arrow.ingest.table_stream import csv_parse, open_table_file

__all__ = ["warn_codes"]

_PROBE = 1 << 20  # bytes of a file's text read again

# digits after a leading zero (0.5 is a number, 007 a code), or a long integer with a plus sign
# (a phone number)
_CODE = r"^\s*([+-]?0[0-9]|\+[0-9]{6,}\s*$)"  # (+3 is a signed number: QA review58c)


def warn_codes(path: str, batch: pa.RecordBatch, endpoint_url: str | None,
               warned: set[str] | None = None) -> None:
    """Warn when a numeric column of ``batch`` (a CSV file's first block) holds text such
    as ``007`` or ``+4930123`` that the stored number loses; ``warned``: the columns warned
    of already in another file of the same table (a folder of 50 files warned 50 times: QA
    review58c), updated."""
    import pyarrow.csv as pcsv

    from dload_arrow.ingest.read_errors import delimiter_fix, other_delimiter
    from dload_arrow.ingest.table_text import csv_convert

    names = batch.schema.names
    if len(names) == 1 and (d := other_delimiter(names[0], path)) is not None:
        warnings.warn(f"{path!r} has one column, {names[0][:60]!r}: "
                      f"{delimiter_fix(d, 'its', path)}", stacklevel=user_stacklevel())
    numeric = [f.name for f in batch.schema if (pa.types.is_integer(f.type) or pa.types
               .is_floating(f.type)) and f.name not in (warned or ())]
    if not numeric:
        return
    f, _ = open_table_file(path, endpoint_url)
    with f:  # the first MiB: where codes show, and a second read stays small (QA review58c)
        reader = pcsv.open_csv(f, read_options=pcsv.ReadOptions(block_size=_PROBE),
                               parse_options=csv_parse(path, endpoint_url),
                               convert_options=csv_convert(numeric, include=numeric))
        text = next(iter(reader), None)
    if text is None:
        return
    found: dict[str, str] = {}  # column -> what its first code became
    for name in numeric:
        col = text.column(name)
        hits = col.filter(pc.fill_null(pc.match_substring_regex(col, _CODE), False))
        if len(hits):
            was = str(hits[0].as_py()).strip()
            at = pc.index(col, hits[0]).as_py()
            found[name] = f"{was!r} read as {batch.column(name)[at].as_py()!r}"
    if found:
        cols = list(found)
        if warned is not None:
            warned.update(cols)
        shown = ", ".join(f"{c} ({how})" for c, how in found.items())
        warnings.warn(
            f"{path!r}: column(s) {shown} hold codes written with leading zeros "
            "or a sign, which a number does not keep; to store them as text, as written: "
            f"--text-column {' --text-column '.join(cols)} (CLI), or open_table(..., "
            f"text_columns={cols!r}) in Python", stacklevel=user_stacklevel())
