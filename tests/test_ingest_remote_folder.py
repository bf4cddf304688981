"""A folder on S3 as ``--from``: not read yet, and the error says so and what to do instead,
whatever ``--as`` and whether the URL ends with a slash."""

from __future__ import annotations

import pytest
import s3fs
from cli_run import RunFn, runner

from dload_arrow import ConfigError
from dload_arrow.ingest import open_source, open_table


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def bucket(s3_root: str, s3_server) -> str:  # type: ignore[no-untyped-def]
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                           skip_instance_cache=True)
    base = s3_root.rsplit("/", 1)[0]
    fs.pipe(f"{base}/photos/cats/01.jpg", b"\xff\xd8 cat")
    fs.pipe(f"{base}/photos/dogs/02.jpg", b"\xff\xd8 dog")
    fs.pipe(f"{base}/events/_SUCCESS", b"")
    fs.pipe(f"{base}/events/part-0.csv", b"id,v\n1,2\n")
    return base


@pytest.mark.parametrize("slash", ["/", ""])
@pytest.mark.parametrize("kind", ["auto", "files", "archive", "table"])
def test_a_folder_on_s3_is_refused_with_what_to_do(
    run: RunFn, bucket: str, slash: str, kind: str
) -> None:
    r = run("commit", "photos", "--from", f"{bucket}/photos{slash}", "--as", kind, rc=1)
    assert r.err.startswith(f"dload: error: '{bucket}/photos/' is a folder (2 objects); "
                            "folders on remote storage are not supported yet")
    assert f"aws s3 sync {bucket}/photos/ ./photos" in r.err
    assert "pack it into one archive (.zip, .tar, .tar.gz or .tar.zst)" in r.err
    assert "not a zip, tar" not in r.err and "neither a table" not in r.err


def test_a_table_folder_on_s3_names_one_of_its_tables(run: RunFn, bucket: str) -> None:
    r = run("commit", "events", "--from", f"{bucket}/events/", rc=1)
    assert f"point --from at a single table file in it (e.g. {bucket}/events/part-0.csv)" in r.err
    with pytest.raises(ConfigError, match="is a folder"):
        open_table(f"{bucket}/events")
    with pytest.raises(ConfigError, match="is a folder"):
        open_source(f"{bucket}/events/")


def test_a_file_in_the_folder_is_still_read(run: RunFn, bucket: str) -> None:
    out = run("commit", "events", "--from", f"{bucket}/events/part-0.csv", "--json").json
    assert out["rows"] == 1
    r = run("commit", "events", "--from", f"{bucket}/events/part-0.csv", "--as", "files", rc=1)
    assert "is a file, not a directory" in r.err and "--as table" in r.err
    r = run("commit", "x", "--from", f"{bucket}/nothing/", rc=1)
    assert f"no object '{bucket}/nothing/'" in r.err
