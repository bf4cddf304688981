"""QA round 46 (pipelines): Arrow tables refused by from_iterable (they index columns), dict
weights refused by mix/choice (list() of a dict is its keys), a failing function's error
names the function and the sample."""

from __future__ import annotations

import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import ConfigError, Repository


@pytest.mark.parametrize("source", [pa.table({"id": [1, 2], "label": ["a", "b"], "s": [1, 2]}),
                                    pa.record_batch({"id": [1, 2, 3], "label": ["a", "b", "c"]})])
def test_from_iterable_refuses_an_arrow_table_which_indexes_columns(source: object) -> None:
    with pytest.raises(ConfigError, match=r"indexes its columns, not its rows; pass "
                                          r"table\.to_pylist\(\)"):
        dl.from_iterable(source)


def test_weights_as_a_dict_are_refused() -> None:
    a, b = dl.from_iterable([("a", i) for i in range(5)]), dl.from_iterable([("b", 0)])
    for make in (lambda: dl.mix([a, b], {0: 0.7, 1: 0.3}), lambda: dl.choice([a, b],
                                                                             {0: 0.7, 1: 0.3})):
        with pytest.raises(ConfigError, match="not a dict: pass list"):
            make()


def test_a_failing_function_names_itself_and_the_sample(repo: Repository) -> None:
    repo.commit("a", [(f"k{i:03d}", {"x": i}) for i in range(20)], progress=False)

    def inverse(row: dict[str, int]) -> dict[str, float]:
        return {"y": 1 / (row["x"] - 5)}

    with pytest.raises(ZeroDivisionError) as e:  # its own type: except clauses still match
        for _ in repo.dataset("a").shuffle(seed=1).map(inverse):
            pass
    assert e.value.__notes__ == [
        "(dload_arrow: raised by the pipeline's function "
        "test_a_failing_function_names_itself_and_the_sample.<locals>.inverse, on the sample "
        "with __key__ 'k005')"]


def test_one_exception_object_raised_again_is_noted_once() -> None:
    error = ValueError("cached")

    def fail(v: int) -> int:
        raise error

    for _ in range(3):
        with pytest.raises(ValueError):
            list(dl.from_iterable([1]).map(fail))
    assert len(error.__notes__) == 1


def test_a_failing_flat_map_names_the_users_function(repo: Repository) -> None:
    repo.commit("a", [(f"k{i:03d}", {"x": i}) for i in range(20)], progress=False)

    def pieces(row: dict[str, int]) -> list[int]:
        return [row["x"] // (row["x"] - 3)]

    with pytest.raises(ZeroDivisionError) as e:
        list(repo.dataset("a").pipeline().flat_map(pieces))
    (note,) = e.value.__notes__
    assert "test_a_failing_flat_map_names_the_users_function.<locals>.pieces, on the sample " \
           "with __key__ 'k003'" in note and "lambda" not in note
