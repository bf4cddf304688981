"""Several archives from one ``dload commit``/``append``: a repeated ``--from``, or a pattern
(``'wds-*.tar'``, ``'wds-{000000..000099}.tar'``); a folder of archives is read by
:func:`~dload_arrow.ingest.open_source` itself (see ingest/archive_set.py)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

from dload_arrow.errors import ConfigError, NotFoundError

__all__ = ["read_archives", "remote_pattern_hint", "source_paths"]


def source_paths(sources: Sequence[str]) -> tuple[list[str], str]:
    """The paths the ``--from`` options name (patterns expanded, in the order given) and what
    to call them in messages."""
    from dload_arrow.ingest.archive_set import archives_of, expand_pattern

    paths = [p for s in sources for p in expand_pattern(s)]
    if len(paths) > 1:  # a folder of archives among several: its archives, in name order
        paths = [a for p in paths for a in archives_of(p)]
    if len(sources) == 1:
        where = sources[0]
    else:
        where = f"--from {sources[0]!r} and {len(sources) - 1} more"
    return paths, where


def read_archives(paths: Sequence[str], where: str, kind: str, include: Sequence[str],
                  exclude: Sequence[str], split: str | None, key_column: str | None,
                  text: Sequence[str], endpoint_url: str | None, progress: bool
                  ) -> tuple[Any, None, dict[str, Any]]:
    """``(samples, None, report)`` for ``repo.commit`` from several archives, each read as
    ``--from ARCHIVE`` reads it (ingest/archive_set.py)."""
    from dload_arrow.ingest.detect import open_archives
    from dload_arrow.ingest.kinds import table_format
    from dload_arrow.ingest.location import is_remote, local_path

    tables = [p for p in paths if table_format(p, json_lines=True)]
    if tables:  # (QA docs59: told to use --as table, which then refused several --from)
        if any(is_remote(p) for p in tables):  # (remote folders are not read: QA review59e)
            raise ConfigError(f"{where}: {tables[0]!r} is a table; several remote tables are "
                              "committed one by one: commit the first, then `dload append` "
                              "each other one")
        folder = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in tables])
        from dload_arrow.ingest.table_stream import without_compression

        ext = os.path.splitext(without_compression(tables[0]))[1] or ".csv"
        raise ConfigError(
            f"{where}: {tables[0]!r} is a table; several tables are read as one from a folder "
            f"that holds them: `--from {folder}` with --include naming them (a glob on their "
            f"names, such as '*{ext}'), or commit the first and `dload append` each other one")
    if kind not in ("auto", "archive"):
        raise ConfigError(f"{where}: several --from are read together only as archives; "
                          f"--as {kind} reads one location: commit the first, then `dload "
                          "append` each other one")
    if key_column or text:
        raise ConfigError("--key-column and --text-column are for tables; several --from are "
                          "read as archives, whose keys are file paths")
    for p in paths:
        if not is_remote(p) and os.path.isdir(local_path(p)):
            raise ConfigError(
                f"{where}: {p!r} is a folder; several --from are read together only when each "
                "is an archive (zip, tar, tar.gz, tar.zst): commit the folder with one --from, "
                "then `dload append NAME --from` each other location")
    src = open_archives(paths, include=include, exclude=exclude, split=split or "last",
                        endpoint_url=endpoint_url, where=where)
    src.progress = progress
    src.tables_refused = kind == "auto"
    report = src.report.to_dict()
    return src.reader(), None, {"kind": "archives", "archives": len(paths), **report}


@contextlib.contextmanager
def remote_pattern_hint(sources: Sequence[str]) -> Iterator[None]:
    """A remote ``--from`` written as a pattern is looked up as it is (an object's name may
    hold ``*`` or braces): when it is not found, say that patterns are local only (QA
    audio59: 's3://b/wds-{0..9}.tar' got "no object ... check the URL")."""
    try:
        yield
    except NotFoundError as e:
        patterns = [s for s in sources if "://" in s and re.search(r"[*?\[{]", s)]
        if not patterns:
            raise
        raise NotFoundError(f"{e}; patterns such as {patterns[0]!r} are expanded for local "
                            "paths only: give each remote archive its own --from (repeat "
                            "it)") from e
