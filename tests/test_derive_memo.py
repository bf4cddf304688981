"""The derive memo is never stale: the fingerprint covers the code and data a pipeline uses.

Helpers are defined with ``exec`` in a fresh namespace (as a notebook cell or script defines
them), so a test can change a global, a helper's body or a captured value and derive again.
"""

from __future__ import annotations

import dataclasses
import functools
import os
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
