"""A committed table's columns in the types dload stores and every read path handles.

- String and binary *views* become plain strings and binary: Parquet stores them so anyway,
  and compute kernels such as ``take`` and ``filter`` refuse views.
- Large strings, binary and lists (what polars and pandas hand over) become plain ones, inside
  lists, structs, maps and dictionaries too, and every list's value field is named ``item``
  (``list_types.py``), so the same rows give the same version id (and share shards)
  whichever library held them. A column with more than 2 GiB of values in one
  batch, which 32-bit offsets cannot address, keeps its large type. A dataset stored with large
  types (by ``schema=``, or before this rule) keeps them: an append is cast to its types.
- Dictionary columns are stored with int32 indices and unordered (Parquet keeps no category
  order: an ordered flag without its order would compare and sort wrong; a warning says so).
- Dictionary columns of non-string values are decoded, warned: Arrow cannot read them back
  from Parquet (``Unsupported cast from int64 to dictionary``); string dictionaries (pandas
  and polars categoricals) stay, Parquet keeps them as dictionaries.
- pandas' own Arrow extension types (Period, Interval) are refused with the conversion: their
  meaning lives in pandas' registration, absent from other readers.
- polars' categorical and enum field metadata (``_PL_ENUM_VALUES2``, ``_PL_CATEGORICAL2``) is
  dropped: kept in the stored schema, it makes polars read a value appended outside the enum
  as null while Arrow and samples read it; without it every reader sees the dictionary.
- A pandas column of equal-shaped numpy arrays (what ``to_pandas()`` gives for a tensor
  column) becomes a tensor column (``store/pandas_table.py``).
- A nested fixed-size list of numbers (a polars ``Array`` of shape (2, 3), what
  ``to_polars()`` gives for a tensor column) becomes a tensor column of that shape (flat,
  with ``dload.shape``), as a pandas column of arrays does: the rows of ``to_polars()``
  committed back get the dataset's own id (:func:`flat_tensor`; ``store/conform.py`` does the
  same for an append to a tensor column, and nests a tensor again for a dataset that stored a
  nested list before this rule, :func:`nested_tensor`); a missing inner list or value is a
  missing number of the tensor, so every batch of a column takes the same type.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import list_slots, numpy_values
from dload_arrow.errors import SchemaError, user_stacklevel
from dload_arrow.store.list_types import is_list_view, list_view_with
from dload_arrow.type_walk import holds_type, is_text_type

__all__ = ["CodesSeen", "check_text", "flat_tensor", "nested_tensor", "storable"]

_PLAIN = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary(),
          pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}
_WIDE = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}
_POLARS_META = b"_PL_"  # polars' own field metadata: enum values, categorical ordering


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def flat_tensor(col: pa.Array, want: tuple[int, ...]) -> pa.Array | None:
    """A nested fixed-size list column of numbers (a polars ``Array`` of shape (2, 3)) as the
    flat fixed-size list a tensor column of shape ``want`` stores, a missing inner list or
    number as missing numbers; None when ``col`` is not one (another layout or shape)."""
    shape: list[int] = []
    t = col.type
    while pa.types.is_fixed_size_list(t):
        shape.append(t.list_size)
        t = t.value_type
    if len(shape) < 2 or not _numeric(t) or tuple(shape) != tuple(want):
        return None
    size = math.prod(shape)
    values: pa.Array = col
    for _ in shape:  # down the nesting: a missing list's slots are missing numbers
        slots = list_slots(values, np.zeros(len(values), bool))
        assert slots is not None  # (no row counts as present: never None)
        if values.null_count:
            missing = pa.array(np.repeat(numpy_values(values.is_null()), values.type.list_size))
            values = pc.if_else(missing, pa.nulls(len(slots[0]), slots[0].type), slots[0])
        else:
            values = slots[0]
    mask = col.is_null() if col.null_count else None
    return pa.FixedSizeListArray.from_arrays(values, size, mask=mask)


def _as_tensor(field: pa.Field, col: pa.Array) -> tuple[pa.Field, pa.Array] | None:
    """A nested fixed-size list of numbers as the tensor column it stands for (None: not
    one)."""
    from dload_arrow.store.rows import SHAPE_META  # rows imports this module

    shape: list[int] = []
    t = col.type
    while pa.types.is_fixed_size_list(t):
        shape.append(t.list_size)
        t = t.value_type
    if len(shape) < 2 or not _numeric(t) or SHAPE_META in (field.metadata or {}):
        return None  # (a shape given is checked by check_schema, named)
    if 0 in shape:
        raise SchemaError(f"column {field.name!r}: a tensor of shape {tuple(shape)} holds "
                          "nothing and is not stored (Parquet reads it back as an error): "
                          "drop the column, or give every dimension a size of 1 or more")
    flat = flat_tensor(col, tuple(shape))
    if flat is None:
        return None
    meta = {**(field.metadata or {}), SHAPE_META: json.dumps(shape).encode()}
    return pa.field(field.name, flat.type, field.nullable, meta), flat


def nested_tensor(col: pa.Array, want: pa.DataType) -> pa.Array | None:
    """A flat tensor column as the nested fixed-size list type ``want`` of as many numbers
    (a dataset that stored a polars ``Array`` nested); None when ``col`` is not one."""
    sizes: list[int] = []
    t = want
    while pa.types.is_fixed_size_list(t):
        sizes.append(t.list_size)
        t = t.value_type
    if (len(sizes) < 2 or not pa.types.is_fixed_size_list(col.type)
            or col.type.value_type != t or col.type.list_size != math.prod(sizes)):
        return None
    values = col.flatten()
    if col.offset or values.null_count:
        return None
    for size in reversed(sizes[1:]):
        values = pa.FixedSizeListArray.from_arrays(values, size)
    mask = col.is_null() if col.null_count else None
    return pa.FixedSizeListArray.from_arrays(values, sizes[0], mask=mask)


def _pandas_only(field: pa.Field) -> None:
    """Refuse pandas' own Arrow types: their meaning lives in pandas' registration, which a
    reading process need not have (QA tabular60: a ``period[M]`` column read back elsewhere as
    648, 649, 650: months since 1970; an Interval as dicts)."""
    ext = getattr(field.type, "extension_name", None) or (field.metadata or {}).get(
        b"ARROW:extension:name", b"").decode(errors="replace")  # (read without pandas)
    c = field.name
    if ext == "pandas.period":
        freq = getattr(field.type, "freq", None) or json.loads(  # (read without pandas)
            (field.metadata or {}).get(b"ARROW:extension:metadata") or b"{}").get("freq", "?")
        raise SchemaError(
            f"column {c!r} is a pandas Period (period[{freq}]), which Parquet stores as bare "
            f"int64 counts of periods since 1970 (of months: 2024-01 as 648): SQL, polars and "
            f"a process "
            f"without pandas' registration read those numbers. Convert it first: "
            f"df[{c!r}].dt.to_timestamp() (each period's start, a timestamp) or "
            f"df[{c!r}].astype(str) ('2024-01')")
    if ext == "pandas.interval":
        raise SchemaError(
            f"column {c!r} is a pandas Interval, which Parquet stores as a struct of its "
            f"bounds (read back elsewhere as {{'left': ..., 'right': ...}} dicts, which side is "
            f"closed lost). Convert it first: df[{c!r}].astype(str) ('(0, 1]'), or two "
            f"columns from df[{c!r}].array.left and .right")


def storable(field: pa.Field, col: pa.Array) -> tuple[pa.Field, pa.Array]:
    """``field`` and ``col`` in the type dload stores (module doc)."""
    _pandas_only(field)
    meta = field.metadata
    if meta and any(k.startswith(_POLARS_META) for k in meta):
        kept = {k: v for k, v in meta.items() if not k.startswith(_POLARS_META)}
        field = field.with_metadata(kept) if kept else field.remove_metadata()
    tensor = _as_tensor(field, col)
    if tensor is not None:
        return tensor
    if pa.types.is_dictionary(col.type) and col.dictionary.null_count:  # a null held in the
        col = col.dictionary_decode().dictionary_encode()  # dictionary: Parquet writes none
    t = col.type
    if _ordered(t):
        warnings.warn(
            f"column {field.name!r} {'is' if pa.types.is_dictionary(t) else 'holds'} an "
            "ordered categorical; Parquet keeps no category order, so it is stored unordered "
            "(read back, its categories come in the order values appear): apply your order "
            "after reading (pandas: pd.CategoricalDtype(categories, ordered=True); polars: "
            "pl.Enum(categories)), or store the codes", stacklevel=user_stacklevel())
    if pa.types.is_dictionary(t) and not is_text_type(t.value_type):
        warnings.warn(
            f"column {field.name!r} is a categorical of {t.value_type} values; Parquet gives "
            f"a dictionary of non-strings back only as its values, so it is stored (and read) "
            f"as {t.value_type}, not as a category (LightGBM, CatBoost and XGBoost find "
            f"categorical features by that dtype): apply .astype('category') after "
            f"reading, or store its categories as text (.astype(str).astype('category'))",
            stacklevel=user_stacklevel())
        t = t.value_type
    try:
        plain = _plain(t)
    except SchemaError as e:
        raise SchemaError(f"column {field.name!r}: {e}") from None
    if plain == col.type and str(plain) == str(col.type):  # (== ignores a list's field name)
        return _list_view(field, col)
    try:
        return field.with_type(plain), col.cast(plain)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # over 2 GiB of values in one batch: only 64-bit offsets address them
        wide = _plain(t, wide=True)
        return (field, col) if wide == col.type else (field.with_type(wide), col.cast(wide))


def _list_view(field: pa.Field, col: pa.Array) -> tuple[pa.Field, pa.Array]:
    """A list view column with its values' types plain (``list_types.py``)."""
    if not is_list_view(col.type):
        return field, col
    value = _plain_field(col.type.value_field, False)
    if value == col.type.value_field or col.type.value_type in _WIDE:  # (a view of views:
        return field, col  # stored as it is)
    new = list_view_with(col, value)
    return field.with_type(new.type), new


def _plain(t: pa.DataType, wide: bool = False) -> pa.DataType:
    """``t`` with its view and large string, binary and list types plain, at every depth
    (``wide``: its views as large types, the large ones kept)."""
    leaf = (_WIDE if wide else _PLAIN).get(t)
    if leaf is not None:
        return leaf
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return t  # as given: pyarrow 26 casts [[1, 2], [3]] into a list as [[1, 2], []]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        large = wide and pa.types.is_large_list(t)
        return (pa.large_list if large else pa.list_)(
            _plain_field(t.value_field, wide).with_name("item"))
    if pa.types.is_fixed_size_list(t):
        if t.list_size == 0:
            raise SchemaError(f"a fixed-size list of 0 values ({t}) holds nothing and is not "
                              "stored (Parquet reads it back as an error): drop the column, "
                              "or give it a size of 1 or more")
        return pa.list_(_plain_field(t.value_field, wide).with_name("item"), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([_plain_field(f, wide) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_plain_field(t.key_field, wide), _plain_field(t.item_field, wide),
                       t.keys_sorted)
    if pa.types.is_dictionary(t):  # int32 indices whatever the library's (pandas: int8);
        # unordered: the order is not kept, and a flag without it would sort wrong
        return pa.dictionary(pa.int32(), _plain(t.value_type, wide))
    return t


class CodesSeen:
    """A commit's unordered text categoricals, batch by batch: their categories (chunk after
    chunk) and their values as they first appear. Parquet keeps the values, so a column reads
    back with its categories in that order, unused ones gone, and its codes change where the
    two differ (QA recsys63; judged over the whole input, not batch by batch: QA review63b;
    a reader's too: review63c)."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn  # (at the caller's line: errors.user_warner)
        self.order: dict[str, dict[str, None]] = {}
        self.seen: dict[str, dict[str, None]] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        for field, col in zip(batch.schema, batch.columns, strict=True):
            t = field.type
            if not (pa.types.is_dictionary(t) and not t.ordered
                    and is_text_type(t.value_type)):
                continue
            values = col.dictionary.to_pylist()
            self.order.setdefault(field.name, {}).update(dict.fromkeys(values))
            self.seen.setdefault(field.name, {}).update(dict.fromkeys(
                values[i] for i in pc.unique(col.indices.drop_null()).to_pylist()))

    def finish(self) -> None:
        """Warn of each column whose codes change."""
        for name, order in self.order.items():
            if list(self.seen[name]) != list(order):
                self.warn(f"column {name!r} is a categorical whose categories are not in the "
                     "order its values first appear, or not all used; Parquet keeps the "
                     "values, so it reads back with its categories in that order, unused ones "
                     "gone: its codes (.cat.codes) change. Apply your vocabulary after "
                     "reading (pandas: .cat.set_categories(vocab); polars: "
                     ".cast(pl.Enum(vocab))), or store the codes as a column")


def _ordered(t: pa.DataType) -> bool:
    """Whether ``t`` is, or holds (in lists, structs, maps), an ordered dictionary."""
    if pa.types.is_dictionary(t):
        return bool(t.ordered)
    return any(_ordered(t.field(i).type) for i in range(t.num_fields))


def _plain_field(f: pa.Field, wide: bool) -> pa.Field:
    return f.with_type(_plain(f.type, wide))


def check_text(batch: pa.RecordBatch, key: str | None) -> None:
    """Refuse a text column of ``batch`` holding bytes that are not UTF-8 (a Parquet or Arrow
    file written without the check: Spark, C++, ``Array.from_buffers``): refused at the
    commit, not at every read of the version (QA text64). The ``key`` column says its row."""
    for f, col in zip(batch.schema, batch.columns, strict=True):
        if f.name != key and holds_type(f.type, is_text_type):
            _valid_text(f.name, col)


def _valid_text(name: str, col: pa.Array) -> None:
    try:
        col.validate(full=True)
        if pa.types.is_dictionary(col.type):  # (its dictionary is not checked with it)
            col.dictionary.validate(full=True)
    except pa.ArrowInvalid as e:
        raise SchemaError(
            f"column {name!r} holds text that is not UTF-8 ({e}); text columns hold "
            "UTF-8: decode it from its encoding where it was written (a file: `iconv -f "
            "latin1 -t utf-8`), or store the column as bytes (binary)") from e
