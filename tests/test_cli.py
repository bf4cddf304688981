"""Every `dload` command end to end, in subprocesses, against a local root and an S3 root.

One long scenario per root keeps the file fast (each subprocess imports pyarrow); the
assertions along the way are what each command promises.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import zstandard

DLOAD = str(Path(sys.executable).parent / "dload")


class Result:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.rc, self.out, self.err = proc.returncode, proc.stdout, proc.stderr

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def dload(*args: str, cwd: Path, rc: int = 0, env: dict[str, str] | None = None,
          stdin: str | None = None) -> Result:
    proc = subprocess.run([DLOAD, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, input=stdin, timeout=120)
    r = Result(proc)
    assert r.rc == rc, f"dload {' '.join(args)} -> {r.rc}\nstdout: {r.out}\nstderr: {r.err}"
    if rc == 1:  # user errors: one line, no traceback
        assert "Traceback" not in r.err and r.err.count("\n") == 1, r.err
    return r


def blob(i: int) -> bytes:
    return random.Random(i).randbytes(300)  # incompressible, so shards split by size


def make_inputs(base: Path) -> dict[str, Path]:
    folder = base / "photos"
    for i in range(6):
        d = folder / ("cats" if i % 2 else "dogs")
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{i:02d}.jpg").write_bytes(blob(i))
        (d / f"{i:02d}.json").write_text(json.dumps({"i": i}))
    (folder / "NOTES").write_text("not a sample")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for i in range(6, 9):
            for ext, data in (("jpg", blob(i)), ("json", json.dumps({"i": i}).encode())):
                info = tarfile.TarInfo(f"birds/{i:02d}.{ext}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    archive = base / "birds.tar.zst"
    archive.write_bytes(zstandard.ZstdCompressor().compress(raw.getvalue()))
    table = base / "events.csv"
    table.write_text("id,score\ne1,0.5\ne2,0.25\ne3,1.0\n")
    recipe = base / "make.py"
    recipe.write_text("print('made the photos')\n")
    return {"folder": folder, "archive": archive, "table": table, "recipe": recipe}


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_every_command_end_to_end(kind: str, tmp_path: Path, request: pytest.FixtureRequest
                                   ) -> None:
    root = str(request.getfixturevalue("local_root" if kind == "local" else "s3_root"))
    inp = make_inputs(tmp_path)
    cwd = Path.cwd()
    cache = str(tmp_path / "cache")
    (cwd / "dload.lock").write_text("[datasets]\n")  # pins stay here, whatever is up the tree

    local = kind == "local"  # text-output checks run once, on the local root

    # init --project writes ./dload.toml; every later command finds the root there
    r = dload("init", "--project", "--root", root, "--cache-dir", cache, "--cache-budget",
              "1GB", "--json", cwd=cwd)
    assert r.json["path"] == str(cwd / "dload.toml") and "1GB" in (cwd / "dload.toml").read_text()
    st = dload("status", "--json", cwd=cwd).json
    assert st["settings"]["root"] == {"value": root, "source": str(cwd / "dload.toml")}
    assert st["settings"]["cache_budget"]["value"] == "1GB" and st["root"]["reachable"]
    assert st["credentials"]["needed"] == (kind == "s3")
    if kind == "s3":
        assert st["credentials"]["present"] is True
        assert os.environ["AWS_SECRET_ACCESS_KEY"] not in json.dumps(st)

    # commit a folder (twice: same id, nothing uploaded), append an archive, commit a table
    folder_args = ["photos", "--from", str(inp["folder"]), "--meta", "camera=x100", "--meta",
                   "year=2024", "--recipe", str(inp["recipe"]), "--shard-size", "1KB",
                   "--row-group-size", "400"]
    c1 = dload("commit", *folder_args, "--json", cwd=cwd).json
    assert c1["rows"] == 6 and c1["shards"] > 1 and c1["source"]["unmatched"] == ["NOTES"]
    again = dload("commit", *folder_args, cwd=cwd)
    assert again.out.strip().splitlines()[-1] == c1["version"] and "uploaded 0 shards" in again.out
    a = dload("append", "photos", "--from", str(inp["archive"]), "--json", cwd=cwd).json
    assert a["rows"] == 9 and a["source"]["kind"] == "archive"
    t = dload("commit", "events", "--from", str(inp["table"]), "--key-column", "id", "--json",
              cwd=cwd).json
    assert t["rows"] == 3 and t["source"]["kind"] == "table"
    tg = dload("tag", f"photos@{c1['version'][:12]}", "v1", "--json", cwd=cwd).json
    assert tg["version"] == c1["version"]

    # browsing
    ls = {d["name"]: d for d in dload("ls", "--json", cwd=cwd).json}
    assert set(ls) == {"photos", "events"} and ls["photos"]["version"] == a["version"]
    info = dload("info", "photos@v1", "--json", cwd=cwd).json
    assert info["version"] == c1["version"] and info["rows"] == 6 and info["refs"] == ["v1"]
    assert info["meta"] == {"camera": "x100", "year": 2024}
    assert '  meta: {"camera": "x100", "year": 2024}' in dload("info", "photos@v1", cwd=cwd).out
    assert [f["name"] for f in info["schema"]] == ["__key__", "jpg", "json"]
    vs = dload("versions", "photos", "--json", cwd=cwd).json
    assert [v["version"] for v in vs] == [a["version"], c1["version"]]
    assert vs[0]["parents"] == [c1["version"]] and vs[0]["refs"] == ["latest"]
    assert dload("recipe", "photos", cwd=cwd).out == inp["recipe"].read_text()
    log = dload("log", "photos", "--json", cwd=cwd).json
    # the second, identical commit left latest (and the log) alone
    assert [e["action"] for e in log["moves"]] == ["commit", "append", "tag"]
    # versions --json gives times in the ISO form log --json (and dload sql) give them
    assert [v["time"] for v in vs] == [v["created"] for v in log["versions"]]
    assert dt.datetime.fromisoformat(vs[0]["time"]).tzinfo is not None
    assert [p["version"] for p in log["ancestors"]] == [c1["version"]]
    head = dload("head", "photos", "-n", "2", "--json", cwd=cwd).json
    assert [h["__key__"] for h in head] == ["cats/01", "cats/03"]
    d = dload("diff", "photos@v1", "photos@latest", "--json", cwd=cwd).json
    assert d["added"] == ["birds/06", "birds/07", "birds/08"] and d["removed"] == []
    assert d["shards_shared"] == c1["shards"] and d["shards_only_old"] == 0
    if local:
        assert "npy" not in dload("info", "photos", cwd=cwd).out
        assert "+ 3 keys" in dload("diff", "photos@v1", "photos", cwd=cwd).out
        assert "cats/01" in dload("head", "photos", cwd=cwd).out

    # pins
    assert dload("pin", "photos@v1", "--json", cwd=cwd).json["version"] == c1["version"]
    assert c1["version"] in (cwd / "dload.lock").read_text()
    assert dload("info", "photos", "--json", cwd=cwd).json["version"] == c1["version"]
    assert dload("unpin", "photos", "--json", cwd=cwd).json["unpinned"] is True
    assert c1["version"] not in (cwd / "dload.lock").read_text()

    # data: export, verify, pull, cache, sql
    out = tmp_path / "export"
    files = dload("export", "photos", "birds/07", "--to", str(out), "--json", cwd=cwd).json
    assert sorted(Path(f).relative_to(out).as_posix() for f in files["files"]) == [
        "birds/07.jpg", "birds/07.json"]
    assert (out / "birds" / "07.jpg").read_bytes() == blob(7)
    dload("export", "photos", "--index", "0", "--to", str(out), cwd=cwd)
    assert json.loads((out / "cats" / "01.json").read_text()) == {"i": 1}
    v = dload("verify", "photos", "--json", cwd=cwd).json
    assert v["ok"] and v["checked"] >= a["shards"]
    dload("pull", "photos", "--json", cwd=cwd)
    assert dload("cache", "status", "--json", cwd=cwd).json
    freed = dload("cache", "clear", "--json", cwd=cwd).json["bytes_freed"]
    assert freed > 0 or kind == "local"  # a local root is read in place, not cached
    assert dload("cache", "clear", cwd=cwd).out.startswith("freed 0 B in ")  # a sentence
    q = dload("sql", "select name, num_rows from datasets where name = $n", "--param",
              "n=events", "--json", cwd=cwd).json
    assert q == [{"name": "events", "num_rows": 3}]

    # removal and gc
    assert dload("rm", "events", "--yes", "--json", cwd=cwd).json["removed"] == [t["version"]]
    dload("rm", "photos", "--version", a["version"], "--yes", cwd=cwd)
    dry = dload("gc", "--dry-run", "--grace", "0s", "--json", cwd=cwd).json
    assert dry["dry_run"] and dry["deleted"] >= 2  # the table's shard and the archive's
    done = dload("gc", "--grace", "0s", "--json", cwd=cwd).json
    assert done["deleted"] == dry["deleted"] and done["kept_referenced"] == c1["shards"]
    assert [x["name"] for x in dload("ls", "--json", cwd=cwd).json] == ["photos"]
