"""QA active65, an active-learning loop: a derive whose map read labels from another Dataset
returned its memo with the old labels after a label was corrected (a Dataset was hashed by
type only); `where("__key__ NOT IN ()")` (round 1: nothing labeled yet) was a parse error,
while DuckDB keeps every row."""

from __future__ import annotations

import pytest

import dload_arrow as dl


def test_a_derive_reading_another_dataset_sees_its_new_version(repo: dl.Repository) -> None:
    repo.commit("pool", [(f"img/{i:03d}", {"img": bytes([i]) * 16}) for i in range(8)])
    repo.commit("labels", [(f"img/{i:03d}", {"label": 0}) for i in range(4)])

    def build() -> dl.Pipeline:
        labels = repo.dataset("labels")
        keys = [k for k in labels.to_arrow(columns=[]).column("__key__").to_pylist()]
        view = repo.dataset("pool").where("__key__ IN (" + ", ".join(f"'{k}'" for k in keys)
                                          + ")")
        return view.map(lambda r: {**r, "label": labels.get(r["__key__"])["label"]})

    first = repo.derive("train", build())
    assert repo.derive("train", build()).version == first.version  # the memo: unchanged input
    repo.commit("labels", [(f"img/{i:03d}", {"label": int(i == 0)}) for i in range(4)])
    second = repo.derive("train", build())
    assert second.version != first.version
    assert repo.dataset("train").get("img/000")["label"] == 1
    a = repo.dataset("pool").where("__key__ IN ('img/001')")
    b = repo.dataset("pool").where("__key__ IN ('img/002')")
    assert (dl.Pipeline.fingerprint(a.map(lambda r, v=a: r))
            != dl.Pipeline.fingerprint(a.map(lambda r, v=b: r)))  # a view by its filters


@pytest.mark.parametrize(("condition", "rows"), [
    ("__key__ NOT IN ()", 3), ("__key__ IN ()", 0), ("x NOT IN ()", 2), ("x IN ()", 0),
    ("NOT (x IN ())", 2), ("NOT (x NOT IN ())", 0), ("x IN () OR x = 1", 1)])
def test_an_empty_in_list(repo: dl.Repository, condition: str, rows: int) -> None:
    repo.commit("p", [("a", {"x": 1}), ("b", {"x": None}), ("c", {"x": 2})])
    assert repo.dataset("p").where(condition).to_arrow().num_rows == rows
    sql = repo.sql(f"SELECT count(*) AS n FROM samples('p') WHERE {condition}")
    assert sql.column("n")[0].as_py() == rows
