"""The catalog: an in-process DuckDB with views over a root's manifests, refs and log.

Views (``sql/views``): ``datasets``, ``versions``, ``shards``, ``refs``, ``log``, ``parents``,
``lineage``. Queries may also read samples with ``samples('<name>' [, '<version>'])``.
The views and the raw tables under them are read-only: a query that drops, replaces or shadows
one is refused and the connection is rebuilt. This is the only module family that imports duckdb.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.args import kind
from dload_arrow.catalog.builtin_names import changed_builtins, resolution
from dload_arrow.catalog.call_versions import check_stored, resolve_calls
from dload_arrow.catalog.case_twins import refuse_case_twins
from dload_arrow.catalog.files import ShardFiles, corrupt_copies
from dload_arrow.catalog.interrupt import run_query
from dload_arrow.catalog.name_hints import check_utf8
from dload_arrow.catalog.packed import sql_source
from dload_arrow.catalog.params import bindable_params, given_params, unused_params
from dload_arrow.catalog.samples_sql import find_samples_calls, replace_calls
from dload_arrow.catalog.statements import VIEW_ORDER, all_statements, statement
from dload_arrow.catalog.summaries import Summaries
from dload_arrow.catalog.tables import RAW_SCHEMAS, Snapshot, Snapshotter
from dload_arrow.errors import SqlError, shown
from dload_arrow.storage import Storage, redact_url
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.manifest_cache import ManifestCache
from dload_arrow.store.names import is_digest

__all__ = ["Catalog", "SqlError", "close_all"]

# (name, version or None) -> the manifest to read; the repository resolves tags and pins.
Resolver = Callable[[str, "str | None"], Manifest]
# manifest -> its shards as local Parquet files, held until released (feasibility checked).
FileProvider = Callable[[Sequence[Manifest]], list[ShardFiles]]  # all of a query's, or none

# DuckDB refuses bound parameters in a statement it stores as text (CREATE VIEW, CREATE
# MACRO): the rewrite of samples() binds its file list, so such a statement cannot read it.
_UNPREPARABLE = (
    "samples() cannot be used in CREATE VIEW, PREPARE or a PIVOT whose values come from the "
    "data (statements DuckDB keeps as text or plans before binding): its file list is bound "
    "as a parameter, which they cannot hold (in the query {query!r}); make a table instead: "
    "CREATE TEMP TABLE t AS SELECT ... FROM samples('<name>'), then use t (or list the PIVOT's "
    "values: PIVOT ... ON c IN (...))"
)
# DuckDB's words for a statement that cannot take samples()' bound file list
_NO_PARAMETERS = ("can't be prepared", "Unexpected prepared parameter",
                  "Values were not provided for the following parameters: __dload_samples",
                  "cannot have parameters in their source")


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError as e:  # a core dependency, but say what to do if it is missing
        raise ImportError("the catalog needs duckdb: pip install 'duckdb>=1.1'") from e
    return duckdb


class Catalog:
    """SQL over one root. Use through :meth:`Repository.sql`; one per repository."""

    def __init__(
        self,
        storage: Storage,
        cache_dir: str | os.PathLike[str],
        *,
        resolve: Resolver,
        shard_files: FileProvider,
        manifests: ManifestCache | None = None,
    ) -> None:
        self.storage = storage
        self.manifests = manifests or ManifestCache(storage, cache_dir)
        self.snapshotter = Snapshotter(storage, self.manifests)
        # what a lineage reads of each version (parents, shard digests), kept by version id
        self.summaries = Summaries(self.manifests, cache_dir)
        self._resolve = resolve
        self._shard_files = shard_files
        self._lock = threading.RLock()
        _ALL.add(self)  # (a forked child renews its lock)
        self._con: Any = None
        self._pid = os.getpid()
        self._snapshot: Snapshot | None = None

    def __repr__(self) -> str:
        return f"Catalog({redact_url(self.storage.url)!r})"

    def __getstate__(self) -> dict[str, Any]:
        # A DuckDB connection and a lock do not cross processes; the copy reconnects lazily.
        state = self.__dict__.copy()
        state.update(_con=None, _lock=None, _snapshot=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        _ALL.add(self)

    @property
    def connection(self) -> Any:
        """The DuckDB connection (views created; call :meth:`refresh` for current data)."""
        with self._lock:
            if self._con is not None and self._pid != os.getpid():
                self._con = None  # inherited through fork (kept alive: _keep_inherited)
            if self._con is None:
                duckdb = _duckdb()
                con = duckdb.connect(":memory:")
                # Zoneless time literals against zoned columns read as UTC, as where() and
                # to_polars() read them, and TIMESTAMPTZ values show in UTC, whatever TZ says.
                con.execute("SET TimeZone = 'UTC'")
                tables = self._snapshot.tables if self._snapshot is not None else {}
                for name, schema in RAW_SCHEMAS.items():
                    _register(con, name, tables.get(name, _empty(schema)))
                for view in VIEW_ORDER:
                    con.execute(statement(view).text)
                self._con, self._pid = con, os.getpid()
                _OPEN.add(self)
            return self._con

    def refresh(self) -> Snapshot:
        """Re-list the root and re-register the raw tables (new manifests are fetched once)."""
        with self._lock:
            snap = self.snapshotter.snapshot()
            con = self.connection
            for name, table in snap.tables.items():
                _register(con, name, table)
            self._snapshot = snap
            return snap

    def sql(self, query: str, /, params: dict[str, Any] | None = None,
            *, refresh: bool = True) -> pa.Table:
        """Run ``query`` with ``$name`` parameters bound from ``params``; return a Table.

        numpy and pyarrow scalars in ``params`` are bound as the Python values they hold.
        """
        if not isinstance(query, str):
            raise TypeError(f"sql(query={shown(query)}): query must be SQL text (a str), got "
                            f"{kind(query)}")
        check_utf8(query)
        params = bindable_params(params)
        with self._lock:
            if refresh or self._snapshot is None:
                self.refresh()
            calls = find_samples_calls(query)
            replacements: list[str] = []
            held: list[ShardFiles] = []
            try:
                assert self._snapshot is not None
                resolved = resolve_calls(calls, self._resolve, self._snapshot, self.storage,
                                         self.refresh if refresh else None)
                for call, manifest in zip(calls, resolved, strict=True):
                    check_stored(self._snapshot, self.storage, call.name, manifest.version)
                    refuse_case_twins(call.name, manifest.schema)
                if resolved:  # all sources' files or none (a query opens them together)
                    held.extend(self._shard_files(resolved))
                for i, (files, manifest) in enumerate(zip(held, resolved, strict=True)):
                    key = f"__dload_samples_{i}"
                    if files.paths:  # (no folder named like `x=1` above them is a column)
                        replacements.append(sql_source(self.connection, key, files.paths,
                                                       manifest.schema, params))
                    else:  # a version without shards: an empty table of its schema
                        _register(self.connection, key, _empty(manifest.schema))
                        replacements.append(key)
                rewritten = replace_calls(query, calls, replacements)
                return self._run(rewritten, params, shown=query if calls else None)
            except SqlError as e:  # a damaged cached copy reads as "Out of buffer"
                raise corrupt_copies(held, e.__cause__, redact_url(self.storage.url)) or e \
                    from e.__cause__
            finally:
                for files in held:
                    files.release()

    def query(self, name: str, params: dict[str, Any] | None = None,
              *, refresh: bool = True) -> pa.Table:
        """Run ``sql/queries/<name>.sql`` with ``params`` bound (a view's name: its rows;
        ``$version`` a tag or an id prefix too)."""
        params = dict(params or {})
        st = statement(name)
        if st.kind == "view" and not params:
            return self.sql(f"SELECT * FROM {name}", refresh=refresh)
        v = params.get("version")
        if isinstance(v, str) and isinstance(params.get("name"), str) and not is_digest(v):
            params["version"] = self._resolve(params["name"], v).version  # (ids: as given)
        missing = [p for p in st.params if p not in params]
        extra = [p for p in params if p not in st.params]
        if missing or extra:
            raise SqlError(
                f"statement {name!r} takes parameters {list(st.params)}; "
                f"missing {missing}, unexpected {extra}"
            )
        return self.sql(st.text, params, refresh=refresh)

    def _run(self, query: str, params: dict[str, Any], shown: str | None = None) -> pa.Table:
        """Run ``query``; ``shown`` is the user's text when ``query`` is its rewrite."""
        duckdb, statements = _duckdb(), []
        try:
            statements = self.connection.extract_statements(query)  # (not duckdb's module
            # connection, which close() cannot close: a forked child freeing it crashed)
            kinds = {s.type for s in statements}
            if not kinds:
                raise SqlError(
                    f"empty query {query!r}: give a SQL statement, e.g. "
                    "'SELECT name, num_rows FROM datasets'"
                )
            # Only a statement other than SELECT can change what the built-in names mean.
            before = None if kinds == {duckdb.StatementType.SELECT} else resolution(
                self.connection)
            try:
                result = run_query(self.connection, statements, query, params)
            finally:
                if before is not None:
                    self._keep_builtins(before)
            return result
        except duckdb.Error as e:
            if shown is not None and any(m in str(e) for m in _NO_PARAMETERS):
                raise SqlError(_UNPREPARABLE.format(query=shown)) from e
            if (unused := unused_params(str(e), statements, params)) is not None:
                raise unused from e
            hint = f" (parameters given: {given_params(params)})" if "arameter" in str(e) else ""
            text = str(e)
            if shown is not None:
                # The context DuckDB prints quotes the rewrite (read_parquet($__dload_...)),
                # which the user never wrote: quote their query instead.
                text = text.split("\n\nLINE ", 1)[0].rstrip() + f" (in the query {shown!r})"
            raise SqlError(
                f"{type(e).__name__}: {text}{hint}. Views: {', '.join(VIEW_ORDER)}; "
                "samples('<name>' [, '<version>']) reads a dataset's rows"
            ) from e

    def _keep_builtins(self, before: list[tuple[Any, ...]]) -> None:
        """Refuse a query that changed what a built-in view's name resolves to; reconnect
        (a fresh connection rebuilds every view from the snapshot: simpler and surer than
        undoing a DROP, a CREATE OR REPLACE, a shadowing temp view or a changed search_path)."""
        changed = changed_builtins(before, resolution(self.connection))
        if changed is not None:
            self.close()
            raise SqlError(changed)

    def statements(self) -> list[str]:
        """Names of the named statements in ``sql/``."""
        return sorted(all_statements())

    def close(self) -> None:
        with self._lock:
            if self._con is not None and self._pid == os.getpid():  # (a forked child's: not
                self._con.close()  # closed, as _keep_inherited keeps it)
            self._con = None


_OPEN: weakref.WeakSet[Catalog] = weakref.WeakSet()  # catalogs holding a connection
_ALL: weakref.WeakSet[Catalog] = weakref.WeakSet()  # every catalog of this process
_INHERITED: list[Any] = []  # connections a forked child must never free


def _keep_inherited() -> None:
    """In a forked child: hold every DuckDB connection the parent had open, so that none is
    ever freed there, not even at the child's exit (freeing one, a collected Repository's
    too, crashed the child: QA review63b, review63c); each catalog reconnects on its next
    query."""
    import ctypes

    for catalog in list(_ALL):  # (a lock held by another thread of the parent: QA
        catalog._lock = threading.RLock()  # review63d, its first query too: review63e)
    for con in [c._con for c in list(_ALL) if c._con is not None]:
        _INHERITED.append(con)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(con))  # (one reference never dropped)


os.register_at_fork(after_in_child=_keep_inherited)


def close_all() -> None:
    """Close every catalog's DuckDB connection (a process about to end without the
    interpreter's shutdown, the ``dload`` script: DuckDB then removes its spill files)."""
    for catalog in list(_OPEN):
        catalog.close()


def _register(con: Any, name: str, table: pa.Table) -> None:
    """Make ``name`` a view of ``table`` (replacing it). ``con.register`` would do the same
    but imports pandas (it checks for DataFrames): 0.3-0.45 s on a process's first query."""
    con.from_arrow(table).create_view(name, replace=True)


def _empty(schema: pa.Schema) -> pa.Table:
    """An empty table of ``schema`` (``schema.empty_table()`` imports pandas)."""
    return pa.Table.from_batches([], schema=schema)
