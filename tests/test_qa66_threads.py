"""QA threads66, a web service sharing one Repository: a retention job's rm of
``versions()[N:]`` removed appends still in flight (their manifest stored, their log entry not
yet written, so sorted as the oldest), losing their rows; an SQL query failed at random when
an append that lost its race deleted its manifest between the catalog's listing and read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa

import dload_arrow as dl


def test_a_version_the_log_has_no_time_for_is_listed_as_the_newest(tmp_path: Path) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("items", [("k0", {"x": 0})])
    for i in range(1, 3):
        repo.append("items", [(f"k{i}", {"x": i})])
    latest = repo.dataset("items").manifest.table
    info = dict(json.loads(latest.schema.metadata[b"dload"]), meta={"in": "flight"})
    t = latest.replace_schema_metadata({b"dload": json.dumps(info, sort_keys=True).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    data = sink.getvalue().to_pybytes()
    flight = hashlib.sha256(data).hexdigest()  # an append's manifest before its ref moves
    repo.storage.write(f"datasets/items/manifests/{flight}.arrow", data)
    listed = repo.versions("items")
    assert listed[0].version == flight and listed[0].time is None
    assert all(v.time is not None for v in listed[1:])
    assert [v.time for v in listed[1:]] == sorted((v.time for v in listed[1:]), reverse=True)
