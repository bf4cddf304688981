"""QA round 47 (derive): a map that changes its row in place keeps the values it computes
with in the fingerprint (the memo returned stale rows), a bound method's object and a
callable's helper methods count, a counter keyed by an expression stays state."""

from __future__ import annotations

from typing import Any

import dload_arrow as dl
from dload_arrow import Repository
from dload_arrow.pipeline.fingerprint_state import written_names

SCALE = 2
COUNTS: dict[Any, int] = {}


def _scaled(r: dict[str, Any]) -> dict[str, Any]:
    r["y"] = r["x"] * SCALE
    return r


def _ys(repo: Repository, name: str) -> list[int]:
    return [r["y"] for r in repo.dataset(name).pipeline()]


def test_a_row_changed_in_place_does_not_hide_the_value_it_uses(repo: Repository) -> None:
    global SCALE
    repo.commit("a", [(f"k{i}", {"x": i}) for i in range(5)], progress=False)
    a = repo.dataset("a")
    v1 = repo.derive("g", a.pipeline().map(_scaled))
    SCALE = 100
    try:
        v2 = repo.derive("g", a.pipeline().map(_scaled))
    finally:
        SCALE = 2
    assert v1.version != v2.version and _ys(repo, "g") == [0, 100, 200, 300, 400]

    def make(k: int) -> Any:
        def f(r: dict[str, Any]) -> dict[str, Any]:
            r["y"] = r["x"] * k
            return r
        return f

    assert a.pipeline().map(make(2)).fingerprint() != a.pipeline().map(make(3)).fingerprint()


def test_a_bound_methods_object_and_a_callables_helpers_count(repo: Repository) -> None:
    repo.commit("a", [(f"k{i}", {"x": i}) for i in range(5)], progress=False)
    pipe = repo.dataset("a").pipeline()

    class Scaler:
        def __init__(self, k: int) -> None:
            self.k = k

        def apply(self, r: dict[str, Any]) -> dict[str, Any]:
            return {**r, "y": r["x"] * self.k}

    assert pipe.map(Scaler(2).apply).fingerprint() != pipe.map(Scaler(10).apply).fingerprint()
    assert pipe.map(Scaler(2).apply).fingerprint() == pipe.map(Scaler(2).apply).fingerprint()

    class Twice:
        def clean(self, x: int) -> int:
            return x * 2

        def __call__(self, r: dict[str, Any]) -> dict[str, Any]:
            return {**r, "y": self.clean(r["x"])}

    class Thrice(Twice):
        def clean(self, x: int) -> int:
            return x * 3

    assert pipe.map(Twice()).fingerprint() != pipe.map(Thrice()).fingerprint()

    class Static:
        @staticmethod
        def clean(x: int) -> int:
            return x * 2

        def __call__(self, r: dict[str, Any]) -> dict[str, Any]:
            return {**r, "y": self.clean(r["x"])}

    class Static100(Static):
        @staticmethod
        def clean(x: int) -> int:
            return x * 100

    assert pipe.map(Static()).fingerprint() != pipe.map(Static100()).fingerprint()


def test_an_object_holding_its_own_method_fingerprints_alike_at_any_depth(
        repo: Repository) -> None:
    repo.commit("a", [(f"k{i}", {"x": i}) for i in range(5)], progress=False)
    pipe = repo.dataset("a").pipeline()

    class Stepper:
        def __init__(self) -> None:
            self.step = self.helper  # the object, again, through its own bound method
            self.cache: dict[int, int] = {}

        def helper(self, r: dict[str, Any]) -> dict[str, Any]:
            self.cache[r["x"]] = r["x"]  # a helper's state: by name only
            return r

        def __call__(self, r: dict[str, Any]) -> dict[str, Any]:
            return self.step(r)

    def deep(n: int) -> str:
        return deep(n - 1) if n else pipe.map(fn).fingerprint()

    fn = Stepper()
    first = pipe.map(fn).fingerprint()
    assert deep(50) == deep(200) == first
    assert len(list(pipe.map(fn))) == 5 and fn.cache
    assert pipe.map(fn).fingerprint() == first  # filled as it ran: state


def test_a_counter_keyed_by_an_expression_is_state() -> None:
    def count(r: dict[str, Any]) -> dict[str, Any]:
        COUNTS[r["label"]] = COUNTS.get(r["label"], 0) + 1
        return r

    assert written_names(count.__code__).globals == {"COUNTS"}
    pipe = dl.from_iterable([{"label": i % 2} for i in range(6)]).map(count)
    before = pipe.fingerprint()
    assert len(list(pipe)) == 6 and COUNTS
    assert dl.from_iterable([{"label": i % 2} for i in range(6)]).map(count).fingerprint() == \
        before


def test_derive_of_repeated_keys_and_a_missing_recipe_say_what_fits_a_derive(
        repo: Repository, local_root: str, tmp_path: Any) -> None:
    import pytest
    from test_cli import dload

    from dload_arrow import SchemaError

    repo.commit("a", [(f"k{i:04d}", {"x": i}) for i in range(3)], progress=False)
    with pytest.raises(SchemaError, match=r"3 duplicate keys .*: map __key__ to unique keys .* "
                                          r"or drop __key__ and the items are numbered"):
        repo.derive("twice", repo.dataset("a").pipeline().repeat(2))
    repo.derive("b", repo.dataset("a").pipeline().map(lambda r: {**r, "y": 1}))
    r = dload("recipe", "b", "--root", local_root, cwd=tmp_path, rc=1)
    assert "has no recipe; derive with recipe=" in r.err
