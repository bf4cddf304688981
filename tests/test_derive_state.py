"""What a map function changes as it runs is state, not definition: the fingerprint ignores it.

A call counter, a list of seen rows, ``self.n += 1`` or a Mock's call count change while the
pipeline runs. Hashing them made ``repo.derive`` compute everything again on the second call
and refused a checkpoint in a rebuilt pipeline. Callables without Python code
(``operator.itemgetter``, ``{...}.get``) are hashed by what they hold, not by name only.
"""

from __future__ import annotations

import operator
from typing import Any
from unittest import mock

import pytest

import dload_arrow as dl
from dload_arrow import Repository

CALLS = 0
SEEN: list[int] = []


def counted(r: dict[str, Any]) -> dict[str, Any]:
    global CALLS
    CALLS += 1
    SEEN.append(r["x"])
    return {"__key__": r["__key__"], "y": r["x"] * 2}


@pytest.fixture
def src(repo: Repository) -> dl.Dataset:
    repo.commit("src", [(f"k{i:02d}", {"x": i, "s": f"s{i}"}) for i in range(10)],
                progress=False)
    return repo.dataset("src")


def test_derive_with_a_global_call_counter_computes_once(repo: Repository,
                                                         src: dl.Dataset) -> None:
    before = CALLS
    v1 = repo.derive("doubled", src.map(counted))
    assert CALLS - before == 10
    v2 = repo.derive("doubled", src.map(counted))
    assert CALLS - before == 10  # not called the second time
    assert v2.version == v1.version


def test_derive_with_a_closure_counter_or_a_mock_computes_once(repo: Repository,
                                                               src: dl.Dataset) -> None:
    calls: list[int] = []
    n = 0

    def double(r: dict[str, Any]) -> dict[str, Any]:
        nonlocal n
        n += 1
        calls.append(r["x"])
        return {"__key__": r["__key__"], "y": r["x"] * 2}

    v1 = repo.derive("closure", src.map(double))
    assert repo.derive("closure", src.map(double)).version == v1.version
    assert len(calls) == n == 10

    fn = mock.Mock(side_effect=double)
    v3 = repo.derive("mocked", src.map(fn))
    assert repo.derive("mocked", src.map(fn)).version == v3.version
    assert fn.call_count == 10


class Scaler:
    def __init__(self, k: int) -> None:
        self.k, self.calls = k, 0

    def __call__(self, r: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return {"__key__": r["__key__"], "y": r["x"] * self.k}


def test_a_callable_object_is_hashed_by_its_settings_not_its_counters(src: dl.Dataset) -> None:
    two = Scaler(2)
    before = src.map(two).fingerprint()
    list(src.map(two))
    assert two.calls == 10 and src.map(two).fingerprint() == before
    assert src.map(Scaler(3)).fingerprint() != before


def test_a_rebuilt_pipeline_takes_the_checkpoint_of_one_that_counted(src: dl.Dataset) -> None:
    def make() -> dl.Pipeline:
        return src.shuffle(4, seed=1).map(counted)

    it = iter(first := make())
    head = [next(it)["__key__"] for _ in range(3)]
    state = first.state_dict()
    again = make()
    again.load_state_dict(state)  # the counter moved: the same pipeline all the same
    rest = [r["__key__"] for r in again]
    assert head + rest == [r["__key__"] for r in make()]


def test_itemgetters_and_bound_builtins_are_hashed_by_what_they_hold(
        repo: Repository, src: dl.Dataset) -> None:
    def fp(fn: Any) -> str:
        return src.map(fn).fingerprint()

    assert fp(operator.itemgetter("x")) != fp(operator.itemgetter("s"))
    assert fp(operator.attrgetter("a")) != fp(operator.attrgetter("b"))
    assert fp(operator.methodcaller("get", "x")) != fp(operator.methodcaller("get", "s"))
    assert fp({1: "a"}.get) != fp({1: "b"}.get)
    assert fp(operator.itemgetter("x")) == fp(operator.itemgetter("x"))

    def keyed(v: Any) -> dict[str, Any]:
        return {"v": v}

    a = repo.derive("ig", src.pipeline().map(operator.itemgetter("x")).map(keyed))
    b = repo.derive("ig", src.pipeline().map(operator.itemgetter("s")).map(keyed))
    assert a.version != b.version
    assert [r["v"] for r in repo.dataset("ig").pipeline()] == [f"s{i}" for i in range(10)]


class Sized5:
    def __len__(self) -> int:
        return 5

    def __iter__(self) -> Any:
        return ({"v": i} for i in range(5))


def test_derive_takes_sized_sources_and_generator_functions_declared_finite(
        repo: Repository) -> None:
    def gen() -> Any:
        yield from ({"v": i} for i in range(7))

    assert dl.from_iterable(Sized5()).finite and dl.from_iterable({1, 2}).finite
    assert repo.derive("sized", dl.from_iterable(Sized5())).num_rows == 5
    with pytest.raises(ValueError, match="finite=True"):
        repo.derive("gen", dl.from_iterable(gen))  # a function: it may never end
    v = repo.derive("gen", dl.from_iterable(gen, finite=True))
    assert [r["v"] for r in repo.dataset("gen").pipeline()] == list(range(7))
    assert repo.derive("gen", dl.from_iterable(gen, finite=True)).version == v.version
    with pytest.raises(ValueError, match="chunk"):
        dl.from_iterable([1], chunk=0)
