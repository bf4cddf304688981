"""QA genomics65: a lone FASTA file given to `dload commit --from` got one message whatever
--as said (with --as files, to use --as files), listing four of the table formats; one with no
extension (`chr1`) was a corrupt archive (kind integrity, "re-download the archive")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import RunFn, runner


def _error(err: str) -> dict[str, str]:
    return dict(json.loads(err.strip().splitlines()[-1])["error"])


def test_a_lone_fasta_file(tmp_path: Path, local_root: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    run: RunFn = runner(capsys, ["--root", local_root])
    (tmp_path / "single").mkdir()
    (tmp_path / "noext").mkdir()
    fasta = tmp_path / "single" / "chr1.fasta"
    bare = tmp_path / "noext" / "chr1"
    for f in (fasta, bare):
        f.write_text(">chr1\nACGTACGT\n")
    for f in (fasta, bare):
        err = _error(run("commit", "g", "--from", str(f), "--json", rc=1).err)
        assert err["kind"] == "config" and "re-download" not in err["message"]
        assert ".tsv" in err["message"] and "commit the folder that holds it" in err["message"]
        err = _error(run("commit", "g", "--from", str(f), "--as", "files", "--json", rc=1).err)
        assert "is a file, not a directory" in err["message"]
        assert "commit the folder that holds it" in err["message"]
    assert "by its .fasta extension" in run("commit", "g", "--from", str(fasta), rc=1).err
    assert "it has no extension" in run("commit", "g", "--from", str(bare), rc=1).err
    run("commit", "g", "--from", str(tmp_path / "single"))  # the folder: a sample
