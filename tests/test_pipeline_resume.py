"""Every node checkpoints at random points and resumes exactly in a fresh process."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pipeline_cases
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_harness import check_resume, fresh_worker, stream

CASES = sorted(pipeline_cases.CASES)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("pipelines")
    pipeline_cases.make_datasets(str(path))
    return str(path)


@pytest.fixture(scope="module")
def worker() -> Iterator[ProcessPoolExecutor]:
    with fresh_worker() as pool:
        yield pool


@pytest.fixture(scope="module")
def full_streams(root: str) -> dict[str, list[object]]:
    return {c: stream(c, root)[0] for c in CASES}


@pytest.mark.parametrize("case", CASES)
def test_node_resumes_exactly_in_a_fresh_process(
    case: str, root: str, worker: ProcessPoolExecutor, full_streams: dict[str, list[object]]
) -> None:
    full = full_streams[case]
    assert full, f"{case} produced nothing"

    @settings(max_examples=5, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(k=st.integers(0, len(full)))
    def run(k: int) -> None:
        check_resume(case, root, k, worker, full)

    run()


@pytest.mark.parametrize("case", ["dataset_windowed", "dataset_full", "mix", "buffer_shuffle",
                                  "chain", "repeat"])
def test_same_seed_same_order_in_another_process_and_next_epoch_differs(
    case: str, root: str, worker: ProcessPoolExecutor
) -> None:
    here = stream(case, root, epochs=2)
    there = worker.submit(stream, case, root, 2).result()
    assert here == there
    assert here[0] != here[1], "the second epoch repeated the first"
    if case.startswith("dataset"):  # a shuffle reorders the same rows
        assert sorted(here[0]) == sorted(here[1])


def test_state_after_an_epoch_starts_the_next(root: str, worker: ProcessPoolExecutor) -> None:
    import json

    from pipeline_harness import rest_after

    pipe = pipeline_cases.CASES["dataset_windowed"](root)
    first = list(pipe)
    state = pipe.state_dict()
    assert state["epoch"] == 1 and state["cursor"] is None
    second = list(pipe)
    assert worker.submit(rest_after, "dataset_windowed", root, json.dumps(state)).result() == second
    assert first != second


def test_set_epoch_replays_an_epoch(root: str) -> None:
    pipe = pipeline_cases.CASES["dataset_full"](root)
    a, b = list(pipe), list(pipe)
    pipe.set_epoch(0)
    assert list(pipe) == a
    assert list(pipe) == b


def test_restore_into_another_pipeline_is_refused(root: str) -> None:
    a = pipeline_cases.CASES["dataset_windowed"](root)
    it = iter(a)
    next(it)
    b = pipeline_cases.CASES["dataset_full"](root)
    with pytest.raises(ValueError, match="another pipeline"):
        b.load_state_dict(a.state_dict())


def test_cases_cover_every_operator(root: str) -> None:
    ops: set[str] = set()

    def walk(p: object) -> None:
        ops.add(p.op)  # type: ignore[attr-defined]
        for c in p._children:  # type: ignore[attr-defined]
            walk(c)

    for make in pipeline_cases.CASES.values():
        walk(make(root))
    expected = {
        "dataset", "from_iterable", "random_stream", "map", "map_batches", "filter",
        "flat_map", "scan", "select_columns", "batch", "unbatch", "repeat", "take", "skip",
        "shard", "shuffle_buffer", "concat", "zip_with", "mix", "choice", "select",
    }
    assert expected <= ops, f"no resume case for {sorted(expected - ops)}"


def test_len_is_exact_wherever_it_is_known(
    root: str, full_streams: dict[str, list[object]]
) -> None:
    known = 0
    for case in CASES:
        pipe = pipeline_cases.CASES[case](root)
        try:
            n = len(pipe)
        except TypeError:
            continue
        known += 1
        assert n == len(full_streams[case]), case
        for count in (2, 3):
            parts = [len(pipe.shard(i, count, block=2)) for i in range(count)]
            assert sum(parts) == n, (case, parts)
    assert known >= 20
    with pytest.raises(TypeError, match="only known by reading"):
        len(pipeline_cases.CASES["filter"](root))
