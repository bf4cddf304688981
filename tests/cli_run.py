"""Run `dload` commands in this process for CLI tests (a subprocess per command would import
pyarrow each time): the exit code, stdout and stderr, with user errors checked to be one line."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from dload_arrow.cli.main import main

__all__ = ["Run", "RunFn", "runner"]


@dataclass
class Run:
    rc: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


RunFn = Callable[..., Run]


def runner(capsys: pytest.CaptureFixture[str], extra: Sequence[str] = ()) -> RunFn:
    """``run(*args, rc=0)``: ``dload *args *extra``, asserting the exit code ``rc``."""

    def go(*args: str, rc: int = 0) -> Run:
        capsys.readouterr()
        got = main([*args, *extra])
        c = capsys.readouterr()
        r = Run(got, c.out, c.err)
        assert r.rc == rc, f"dload {' '.join(args)} -> {r.rc}\nstdout: {r.out}\nstderr: {r.err}"
        if rc == 1:  # user errors: one line, no traceback
            assert "Traceback" not in r.err and r.err.count("\n") == 1, r.err
        return r

    return go
