"""Value round-trips (QA roundtrip55): what ``dload export`` writes is strict JSON, and a
``timedelta`` too large for microseconds is refused with the fix that works."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from test_cli import dload

from dload_arrow import Repository, SchemaError


def _strict(raw: bytes) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(raw, parse_constant=refuse)


def test_export_writes_nested_nan_as_null_and_nested_bytes_as_base64(
        tmp_path: Path, local_root: str) -> None:
    repo = Repository.open(local_root)
    repo.commit("d", [("a", {"s": {"x": float("inf"), "y": float("nan"), "z": 1.5},
                             "lb": [b"\x00\xff", b"ok"]})], progress=False)
    out = tmp_path / "out"
    dload("export", "d", "a", "--to", str(out), "--root", local_root, cwd=tmp_path)
    assert _strict((out / "a.s").read_bytes()) == {"x": None, "y": None, "z": 1.5}
    got = _strict((out / "a.lb").read_bytes())
    assert isinstance(got, list) and [base64.b64decode(v) for v in got] == [b"\x00\xff", b"ok"]


def test_a_timedelta_past_microseconds_is_refused_with_a_coarser_unit(
        repo: Repository) -> None:
    huge = dt.timedelta(days=999_999_999)
    with pytest.raises(SchemaError, match=r"give the column a coarser unit: schema= with "
                                          r"pa.duration\('s'\) for it"):
        repo.commit("d", [("a", {"d": huge})], progress=False)
    repo.commit("d", [("a", {"d": huge})], schema=pa.schema([("d", pa.duration("s"))]),
                progress=False)
    assert next(iter(repo.dataset("d").samples()))["d"] == huge
