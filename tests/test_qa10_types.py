"""Types QA round 10: numpy datetime64/timedelta64 samples of mixed units are SchemaErrors
naming the sample, in the first batch (type inference) and in a later one."""

from __future__ import annotations

import numpy as np
import pytest

import dload_arrow as dl


@pytest.mark.parametrize("first,later", [
    (np.datetime64("2024-01-01T00:00:00", "s"), np.datetime64("2024-01-01T00:00:00.5", "ms")),
    (np.datetime64("2024-01-01T00:00:00.123456789"), np.datetime64("2024-01-02")),
    (np.timedelta64(1, "s"), np.timedelta64(1500, "ms")),
])
@pytest.mark.parametrize("at", [1, 3000])  # in the first batch of 1,024 samples, or later
def test_mixed_numpy_time_units_are_a_schema_error_naming_the_sample(
        repo: dl.Repository, first: np.generic, later: np.generic, at: int) -> None:
    rows = [(f"k{i:05d}", {"when": later if i == at else first}) for i in range(at + 2)]
    with pytest.raises(dl.SchemaError, match=rf"sample 'k{at:05d}', column 'when'"):
        repo.commit("t", rows, progress=False)
    assert repo.datasets() == []
