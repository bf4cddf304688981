"""QA vision62: a vision team's first week. Keys differing only in case are warned of,
append refusals no longer advise excluding the new images or every label, a decode map's
torch tensors stack in ``batch()`` and arrays of several shapes are warned of, CLI slips
get a pointer, and a missing text column's warning does not speak of tensors."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.pipeline import collate_checks

torch = pytest.importorskip("torch")


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_keys_differing_only_in_case_with_other_columns_are_warned(
        tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "imgs"
    d.mkdir()
    for i in range(4):
        (d / f"IMG_{i}.JPG").write_bytes(b"\xff\xd8\xff\xd9")
        (d / f"img_{i}.cls").write_text(str(i))
    r = run("commit", "photos", "--from", str(d))
    assert "keys 'IMG_0' (columns ['jpg']) and 'img_0' (columns ['cls']) differ only in case " \
           "(and 3 more pairs)" in r.err
    (d / "x.jpg").write_bytes(b"1")
    (d / "X.jpg").write_bytes(b"2")  # two images: both have a jpg, not warned
    for i in range(4):
        (d / f"img_{i}.cls").unlink()
    assert "differ only in case" not in run("commit", "two", "--from", str(d)).err


def test_append_advice_keeps_the_new_images_and_the_good_labels(
        tmp_path: Path, run: RunFn) -> None:
    old, new, bad = tmp_path / "old", tmp_path / "new", tmp_path / "bad"
    for d in (old, new, bad):
        d.mkdir()
    for i in range(3):
        (old / f"img_{i}.jpg").write_bytes(b"\xff\xd8jpeg")
        (old / f"img_{i}.cls").write_text(str(i))
        (new / f"img_{i + 3}.png").write_bytes(b"\x89PNG")
        (new / f"img_{i + 3}.cls").write_text(str(i))
        (bad / f"img_{i + 6}.jpg").write_bytes(b"\xff\xd8jpeg")
        (bad / f"img_{i + 6}.cls").write_text("cat" if i == 2 else str(i))
    run("commit", "photos", "--from", str(old))
    err = run("append", "photos", "--from", str(new), rc=1).err
    assert ("no new file is of the stored column(s) ['jpg']: if the .png files hold what 'jpg' "
            "holds (another format), convert or rename them to .jpg (leaving them out, "
            "--exclude '*.png', would append every row without 'jpg')") in err
    assert "lacks column" not in err  # no warning about rows that were never stored
    err = run("append", "photos", "--from", str(bad), rc=1).err
    assert ("leave it out with --exclude /img_8.cls (exclude= in Python; --exclude '*.cls' "
            "would drop every label)") in err
    assert "lacks column" not in err


def test_a_missing_text_column_is_not_said_to_turn_into_lists(tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", [("a", {"caption": "c", "label": 1})], progress=False)
    with pytest.warns(UserWarning, match=r"no value in column\(s\) \['caption'\] of 'd': "
                                         r"they store null there; give") as seen:
        repo.append("d", [("b", {"label": 2})], progress=False)
    assert not any("torch" in str(w.message) for w in seen)
    with pytest.warns(UserWarning, match=r"\['label'\] of 'd': they store null there "
                                         r"\(torch then gives"):
        repo.append("d", [("c", {"caption": "x"})], progress=False)


def test_batch_stacks_a_maps_torch_tensors_and_warns_of_several_shapes(
        tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("imgs", [(f"k{i:03d}", {"jpg": bytes([i]) * 12}) for i in range(32)],
                progress=False)

    def dec(s: dict) -> dict:
        x = torch.frombuffer(bytearray(s["jpg"]), dtype=torch.uint8).float().reshape(3, 2, 2)
        return {"x": x}

    batches = list(repo.dataset("imgs").pipeline().map(dec).batch(16))
    assert [tuple(b["x"].shape) for b in batches] == [(16, 3, 2, 2)] * 2
    assert float(batches[1]["x"][0, 0, 0, 0]) == 16.0

    def gray(s: dict) -> dict:
        a = np.frombuffer(s["jpg"], np.uint8).reshape(3, 2, 2)
        return {"odd": a[0] if s["__key__"] == "k007" else a}

    collate_checks._WARNED.discard("odd")
    with pytest.warns(UserWarning, match=r"batch\(\): column 'odd' holds arrays of different "
                                         r"shapes in one batch \(\(3, 2, 2\) uint8 at item 0, "
                                         r"\(2, 2\) uint8 at item 7\)"):
        kinds = [type(b["odd"]).__name__ for b in
                 repo.dataset("imgs").pipeline().map(gray).batch(16)]
    assert kinds == ["list", "ndarray"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per column
        list(repo.dataset("imgs").pipeline().map(gray).batch(16))


def test_cli_slips_get_a_pointer(tmp_path: Path, run: RunFn,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for n in (1, 2):
        (tmp_path / f"part-{n}.tar").write_bytes(b"")
    err = run("commit", "p", "--from", "part-1.tar", "part-2.tar", rc=1).err
    assert "'part-2.tar' is a file: a pattern after --from is expanded by the shell" in err
    err = run("show", "photos", rc=1).err
    assert "To see a dataset: dload info NAME" in err
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jpg").write_bytes(b"\xff\xd8")
    run("commit", "one", "--from", str(tmp_path / "a"))
    assert ": 1 object checked, all ok" in run("verify", "one").out


def test_a_metadata_file_lacking_every_shared_column_is_warned(
        tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "imgs"
    d.mkdir()
    for i in range(12):
        (d / f"img_{i:02d}.jpg").write_bytes(b"\xff\xd8")
        (d / f"img_{i:02d}.cls").write_text(str(i % 3))
        (d / f"img_{i:02d}.json").write_text('{"caption": "c"}')
    (d / "dataset_info.json").write_text('{"classes": 3}')
    err = run("commit", "photos", "--from", str(d)).err
    assert ("'dataset_info.json' lacks the column(s) ['cls', 'jpg'] the other 12 samples have: "
            "it is committed as a sample of its own, key 'dataset_info'") in err
    (d / "dataset_info.json").unlink()
    (d / "img_00.json").unlink()  # a sample without its caption: no stray file
    assert "lacks the column" not in run("commit", "photos2", "--from", str(d)).err


def test_one_field_under_two_extensions_is_warned(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "imgs"
    d.mkdir()
    for i in range(20):
        (d / f"k{i:02d}.jpg").write_bytes(b"\xff\xd8")
        (d / f"k{i:02d}.{'cls' if i % 2 else 'label'}").write_text("1")
    err = run("commit", "photos", "--from", str(d)).err
    assert ("columns 'cls' (10 samples) and 'label' (10) never occur in one sample and "
            "together cover all 20") in err
    for i in range(0, 20, 2):
        (d / f"k{i:02d}.label").rename(d / f"k{i:02d}.cls")
    assert "never occur in one sample" not in run("commit", "photos", "--from", str(d)).err
