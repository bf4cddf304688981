"""One pipeline iterator and threads (QA conc53): two threads reading one iterator at once
handed out items twice or lost them (912 rows of 3,000, no error), with no guard. Now the
second thread is refused while the first reads a chunk, and the first loses nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import dload_arrow as dl
from dload_arrow import ConfigError, Repository


def test_a_second_thread_reading_the_same_iterator_at_once_is_refused() -> None:
    entered, go = threading.Event(), threading.Event()

    def f(x: int) -> int:
        if x == 100 and not entered.is_set():
            entered.set()
            go.wait(10)  # the first thread is in the middle of reading a chunk
        return x

    it = iter(dl.from_iterable(list(range(1000)), chunk=50).map(f))
    got: list[int] = []
    t = threading.Thread(target=lambda: got.extend(it))
    t.start()
    try:
        assert entered.wait(10)
        with pytest.raises(ConfigError, match=r"being read by another thread right now.*"
                           "give each thread its own pipeline"):
            next(it)
    finally:
        go.set()
        t.join()
    assert got == list(range(1000))  # the reading thread lost nothing


def test_threads_taking_turns_on_one_shuffled_iterator_get_every_row_once(
        repo: Repository) -> None:
    repo.commit("d", ((f"k{i:05d}", {"x": i}) for i in range(3000)), row_group_size="8KiB",
                progress=False)
    it = iter(repo.dataset("d").shuffle(2000, seed=0))
    lock, got = threading.Lock(), []

    def pull() -> None:  # one iterator behind a lock: the supported way to share it
        while True:
            with lock:
                row = next(it, None)
            if row is None:
                return
            got.append(row["x"])

    threads = [threading.Thread(target=pull) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(3000))


@pytest.mark.parametrize("reader", ["batches", "samples"])
def test_a_dataset_read_an_error_ended_refuses_to_go_on(
        repo: Repository, monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    """Review 53: `for b in ds.batches()` is a generator, which a Ctrl-C inside the read ends:
    going on with it ended the epoch early without a word (up to the whole epoch lost). Its
    next item now says so; a new read gives every row."""
    import dload_arrow.read.reader as reader_module

    repo.commit("d", ((f"k{i:05d}", {"x": i}) for i in range(3000)), row_group_size="4KiB",
                progress=False)
    ds = repo.dataset("d")
    every = [s["x"] for s in ds.samples()]
    real = reader_module.iter_units

    def interrupted(*args: Any, **kw: Any) -> Any:
        for n, batch in enumerate(real(*args, **kw)):
            if n == 2:
                raise KeyboardInterrupt
            yield batch

    monkeypatch.setattr(reader_module, "iter_units", interrupted)
    it = iter(getattr(ds, reader)())
    got = []
    with pytest.raises(KeyboardInterrupt):
        for item in it:
            got.append(item)
    with pytest.raises(ConfigError, match=rf"this ds\.{reader}\(\) iteration ended with "
                       r"KeyboardInterrupt after \d+ item.*itertools\.islice"):
        next(it)
    monkeypatch.setattr(reader_module, "iter_units", real)
    assert [s["x"] for s in ds.samples()] == every
