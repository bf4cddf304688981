"""QA json62 leftovers: `pull --json` reports its seconds to the millisecond, as commit's
report does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import RunFn, runner


def test_pull_json_seconds_are_rounded(tmp_path: Path, s3_root: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    run: RunFn = runner(capsys, ["--root", s3_root, "--cache-dir", str(tmp_path / "cache")])
    (tmp_path / "d").mkdir()
    for i in range(3):
        (tmp_path / "d" / f"{i}.txt").write_text("x" * (i + 1))
    run("commit", "t", "--from", str(tmp_path / "d"))
    got = json.loads(run("pull", "t", "--json").out)
    assert got["shards_fetched"] >= 1 and not got["in_place"]
    assert got["seconds"] == round(got["seconds"], 3)
    assert len(repr(got["seconds"]).split(".")[-1]) <= 3
