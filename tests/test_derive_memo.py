"""The derive memo is never stale: the fingerprint covers the code and data a pipeline uses.

Helpers are defined with ``exec`` in a fresh namespace (as a notebook cell or script defines
them), so a test can change a global, a helper's body or a captured value and derive again.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pytest

import dload_arrow as dl
from dload_arrow import Repository
from dload_arrow.pipeline.fingerprint import fingerprint

HERE = Path(__file__).parent

USER_CODE = '''
SCALE = 2
def scale(x):
    return x * SCALE
def row(r):
    return {"__key__": r["__key__"], "x": scale(r["x"])}
'''


def user_namespace(code: str = USER_CODE) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "user_script"}
    exec(compile(code, "<user script>", "exec"), ns)
    return ns


@dataclasses.dataclass
class Params:
    k: int


def membership(r: dict[str, Any]) -> bool:
    """Compiles to a frozenset constant, whose repr order follows PYTHONHASHSEED."""
    return r["s"] in {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}


def with_default(value: Any) -> Any:
    def fn(r: Any, a: Any = value) -> Any:
        return (r, a)

    return fn


def fp_of(fn: Any) -> str:
    return dl.from_iterable(list(range(3))).map(fn).fingerprint()


@pytest.fixture
def src(repo: Repository) -> dl.Dataset:
    repo.commit("src", [(f"k{i:02d}", {"x": i}) for i in range(10)], progress=False)
    return repo.dataset("src")


def xs(repo: Repository, name: str) -> list[Any]:
    return [r["x"] for r in repo.dataset(name).pipeline()]


def test_a_changed_global_read_by_a_helper_is_a_new_derivation(
    repo: Repository, src: dl.Dataset
) -> None:
    ns = user_namespace()
    pipe = src.map(ns["row"])
    v1 = repo.derive("scaled", pipe)
    ns["SCALE"] = 100
    v2 = repo.derive("scaled", pipe)  # the same pipeline object: fingerprinted again
    assert v2.version != v1.version and xs(repo, "scaled")[1] == 100
    assert repo.derive("scaled", src.map(ns["row"])).version == v2.version


def test_a_changed_helper_body_is_a_new_derivation(repo: Repository, src: dl.Dataset) -> None:
    ns = user_namespace()
    v1 = repo.derive("scaled", src.map(ns["row"]))
    exec("def scale(x):\n    return x * SCALE + 1\n", ns)  # row() unchanged, its helper not
    v2 = repo.derive("scaled", src.map(ns["row"]))
    assert v2.version != v1.version and xs(repo, "scaled")[1] == 3


def test_changed_captured_arrays_lists_and_dicts_are_new_derivations(
    repo: Repository, src: dl.Dataset
) -> None:
    def centered(mean: np.ndarray) -> dl.Pipeline:
        return src.map(lambda r: {"__key__": r["__key__"], "x": float(r["x"] - mean[0])})

    v1 = repo.derive("centered", centered(np.array([0.0])))
    v2 = repo.derive("centered", centered(np.array([5.0])))
    assert v2.version != v1.version and xs(repo, "centered")[1] == -4.0

    table = {"a": [1, 2]}
    pipe = src.map(lambda r: {"__key__": r["__key__"], "x": r["x"] + table["a"][-1]})
    v3 = repo.derive("lookup", pipe)
    table["a"].append(10)  # mutated in place: same objects, new contents
    v4 = repo.derive("lookup", pipe)
    assert v4.version != v3.version and xs(repo, "lookup")[0] == 10


@pytest.mark.parametrize("change", ["default", "partial", "global_array", "long_list",
                                    "from_iterable", "expression", "dataclass"])
def test_the_fingerprint_sees_each_kind_of_input(change: str) -> None:
    def pair(make: Any) -> tuple[str, str]:
        return make(0), make(1)

    ns = user_namespace("import numpy as np\nW = np.zeros(3)\ndef f(r):\n    return W @ r\n")
    cases = {
        "default": lambda k: fp_of(with_default(np.full(2, k))),
        "partial": lambda k: fp_of(functools.partial(np.add, [k])),
        "global_array": lambda k: (ns["W"].__setitem__(2, k), fp_of(ns["f"]))[1],
        "long_list": lambda k: fp_of(with_default([*range(50_000), k])),
        "from_iterable": lambda k: dl.from_iterable([*range(20_000), k]).fingerprint(),
        "expression": lambda k: dl.from_iterable([{"x": 1}]).filter(pc.field("x") < k)
        .fingerprint(),
        "dataclass": lambda k: fp_of(with_default(Params(k))),
    }
    a, b = pair(cases[change])
    assert a != b
    assert cases[change](0) == a  # and it is deterministic


def test_recursive_and_mutually_recursive_helpers_are_fingerprinted(
    repo: Repository, src: dl.Dataset
) -> None:
    ns = user_namespace(
        "def even(n):\n    return n == 0 or odd(n - 1)\n"
        "def odd(n):\n    return n != 0 and even(n - 1)\n"
        "def row(r):\n    return {'__key__': r['__key__'], 'x': int(even(r['x']))}\n"
    )
    v = repo.derive("parity", src.map(ns["row"]))
    assert xs(repo, "parity") == [1, 0] * 5 and v.num_rows == 10


def test_library_code_and_objects_are_named_not_hashed(
    repo: Repository, src: dl.Dataset
) -> None:
    class Config:
        factor = 2

    cfg = Config()
    pipe = src.map(lambda r: {"__key__": r["__key__"], "x": r["x"] * cfg.factor})
    v1 = repo.derive("cfg", pipe)
    cfg.factor = 3  # an object's attributes are not hashed: documented; force=True is the way
    assert repo.derive("cfg", pipe).version == v1.version
    v2 = repo.derive("cfg", pipe, force=True)
    assert v2.version != v1.version and xs(repo, "cfg")[1] == 3
    assert fp_of(np.sqrt) == fp_of(np.sqrt) and fp_of(np.sqrt) != fp_of(np.exp)


def test_fingerprint_is_the_same_in_processes_with_other_hash_seeds() -> None:
    code = "import test_derive_memo as t; print(t.fp_of(t.membership))"
    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONPATH=str(HERE), PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True)
        outs.add(out.stdout.strip())
    assert outs == {fp_of(membership)}


def test_a_fresh_fingerprint_equals_the_cached_one(src: dl.Dataset) -> None:
    pipe = src.map(user_namespace()["row"])
    assert fingerprint(pipe) == pipe.fingerprint() == fingerprint(pipe)


WORDS = {"apple", "banana", "cherry", "date", "elder", "fig", "grape"}
WORD_LEN = {w: len(w) for w in WORDS}  # the same content in every process, its order not


def word_len(r: dict[str, Any]) -> int:
    return WORD_LEN.get(r["w"], 0)


def long_is_in(last: int) -> Any:
    return pc.field("x").isin([*range(50), last, *range(51, 100)])  # printed: ends only


def test_dicts_and_expressions_hash_the_same_under_other_hash_seeds() -> None:
    code = ("import test_derive_memo as t, dload_arrow as dl; print(t.fp_of(t.word_len), "
            "dl.from_iterable([{'x': 1}]).filter(t.long_is_in(7)).fingerprint())")
    outs = set()
    for seed in ("1", "2", "5", "11"):
        env = dict(os.environ, PYTHONPATH=str(HERE), PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True)
        outs.add(out.stdout.strip())
    assert len(outs) == 1


def test_dicts_hash_by_content_but_an_ordered_dict_by_its_order() -> None:
    assert fp_of(with_default({"a": 1, "b": 2})) == fp_of(with_default({"b": 2, "a": 1}))
    first, second = collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=2, a=1)
    assert fp_of(with_default(first)) != fp_of(with_default(second))


def test_expressions_that_print_alike_hash_apart(repo: Repository) -> None:
    assert str(long_is_in(7)) == str(long_is_in(1000))  # Arrow's text cuts long value sets
    base = dl.from_iterable([{"x": 1}])
    assert base.filter(long_is_in(7)).fingerprint() != base.filter(long_is_in(1000)).fingerprint()
    assert fp_of(with_default(long_is_in(7))) != fp_of(with_default(long_is_in(1000)))


def test_a_big_value_leaves_later_values_hashed_by_content() -> None:
    big = [np.int64(i) for i in range(250_000)]  # not plain json: hashed item by item

    def pipe(vals: list[int]) -> dl.Pipeline:
        def first(r: Any) -> Any:
            return (r, len(big))

        def second(r: Any) -> Any:
            return (r, vals[0])

        return dl.from_iterable([1]).map(second).map(first)  # the last op is hashed first

    assert pipe([1, 2]).fingerprint() != pipe([3, 4]).fingerprint()
    assert pipe([1, 2]).fingerprint() == pipe([1, 2]).fingerprint()


class Tag:
    def __init__(self, t: int) -> None:
        self.t = t


def test_from_iterable_items_are_hashed_by_value_not_repr() -> None:
    tagged = [lambda: [{"w": "a", "tag": Tag(i)} for i in range(300)]][0]
    assert dl.from_iterable(tagged()).fingerprint() == dl.from_iterable(tagged()).fingerprint()
    a1 = [np.arange(2000) for _ in range(3)]
    a2 = [np.arange(2000) for _ in range(3)]
    a2[1][1000] = -7  # numpy's repr of a long array shows its ends only
    assert dl.from_iterable(a1).fingerprint() != dl.from_iterable(a2).fingerprint()


def test_a_functools_cache_wrapper_is_hashed_by_the_function_it_wraps() -> None:
    def cached(k: int) -> Any:
        return user_namespace(
            f"import functools\n@functools.cache\ndef f(x):\n    return x * {k}\n")["f"]

    assert fp_of(cached(2)) != fp_of(cached(3)) and fp_of(cached(2)) == fp_of(cached(2))


def test_a_spawned_worker_reads_the_main_script_as_main() -> None:
    code = "def f(r):\n    return r\n"
    as_main = user_namespace(code.replace("def", "__name__ = '__main__'\ndef", 1))["f"]
    as_mp_main = user_namespace(code.replace("def", "__name__ = '__mp_main__'\ndef", 1))["f"]
    assert as_mp_main.__module__ == "__mp_main__"
    assert fp_of(as_main) == fp_of(as_mp_main)


def test_a_torch_dataset_carries_the_main_process_fingerprint_into_workers() -> None:
    torch_ds = pytest.importorskip("dload_arrow.torch")
    pipe = dl.from_iterable(list(range(5))).map(word_len)
    ds = torch_ds.as_iterable_dataset(pipe)
    assert ds.pipe._fp is not None  # computed in the constructor, in the main process
    assert pickle.loads(pickle.dumps(ds)).pipe._fp == pipe.fingerprint()


class Proxy:
    """A lazy proxy: every attribute it lacks raises something other than AttributeError."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"not connected: {name}")

    def __call__(self, r: Any) -> Any:
        return r


def test_an_unreadable_object_never_breaks_iteration(monkeypatch: pytest.MonkeyPatch) -> None:
    assert list(dl.from_iterable([1, 2]).map(Proxy())) == [1, 2]
    assert fp_of(Proxy()) == fp_of(Proxy())

    def broken(pipe: Any) -> str:
        raise RuntimeError("cannot fingerprint")

    monkeypatch.setattr("dload_arrow.pipeline.fingerprint.fingerprint", broken)
    pipe = dl.from_iterable([1, 2])
    assert list(pipe) == [1, 2]
    with pytest.raises(RuntimeError, match="cannot fingerprint"):
        pipe.state_dict()
