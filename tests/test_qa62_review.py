"""QA review62: the review of this session's fixes. The torch adapter warns of an unversioned
state under strict=False too; batch() stacks torch tensor subclasses and says "dtypes" when
only those differ; the append hint pairs a new format with the stored column of its type;
warnings of an append point at the caller's line; Python's own errors name Repository."""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.pipeline import collate_checks

torch = pytest.importorskip("torch")

from dload_arrow.torch import as_iterable_dataset  # noqa: E402


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")


def test_the_torch_adapter_warns_of_an_unversioned_state_too(repo: dl.Repository) -> None:
    repo.commit("docs", [(f"d{i:03d}", {"x": i}) for i in range(100)], progress=False)
    ds = as_iterable_dataset(repo.dataset("docs").shuffle(seed=0))
    it = iter(ds)
    for _ in range(30):
        next(it)
    state = {k: v for k, v in ds.state_dict().items() if k != "datasets"}  # an older one's
    repo.append("docs", [(f"e{i:03d}", {"x": 1000 + i}) for i in range(20)], progress=False)
    later = as_iterable_dataset(repo.dataset("docs").shuffle(seed=0))
    with pytest.warns(UserWarning, match=r"strict=False\): this state records no dataset "
                                         r"versions") as seen:
        later.load_state_dict(state, strict=False)
    assert seen[0].filename == __file__


def test_batch_stacks_tensor_subclasses_and_names_dtypes(repo: dl.Repository) -> None:
    class Image(torch.Tensor):  # as torchvision.tv_tensors.Image
        pass

    repo.commit("imgs", [(f"k{i}", {"i": i}) for i in range(4)], progress=False)
    b = next(iter(repo.dataset("imgs").pipeline().map(
        lambda r: {"img": torch.zeros(3, 4, 4).as_subclass(Image)}).batch(4)))
    assert isinstance(b["img"], torch.Tensor) and tuple(b["img"].shape) == (4, 3, 4, 4)
    mixed = next(iter(repo.dataset("imgs").pipeline().map(lambda r: {"w": torch.zeros(
        2, dtype=torch.int16 if r["i"] else torch.uint8)}).batch(4)))
    assert mixed["w"].dtype == torch.int16  # promoted, as np.stack does
    collate_checks._WARNED.discard("u16")
    with pytest.warns(UserWarning, match=r"column 'u16' holds arrays of different dtypes in "
                                         r"one batch .* cast them to one dtype in the map"):
        got = next(iter(repo.dataset("imgs").pipeline().map(lambda r: {"u16": torch.zeros(
            2, dtype=torch.uint16 if r["i"] == 2 else torch.uint8)}).batch(4)))
    assert isinstance(got["u16"], list)


def test_the_append_hint_pairs_the_new_format_with_a_column_of_its_type(
        tmp_path: Path, run: RunFn) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for i in range(3):
        (a / f"img{i}.jpg").write_bytes(b"JPEG")
        (a / f"img{i}.cls").write_text(str(i))
    for i in (3, 4):
        (b / f"img{i}.png").write_bytes(b"PNG")  # unlabelled new images
    run("commit", "pics", "--from", str(a))
    err = run("append", "pics", "--from", str(b), rc=1).err
    assert "convert or rename them to .jpg" in err and ".cls" not in err.split("append adds")[1]


def test_append_warnings_point_at_the_callers_line(repo: dl.Repository) -> None:
    repo.commit("t", pa.table({"__key__": ["a"], "x": [1], "y": [1.0]}), progress=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        repo.append("t", pa.table({"__key__": ["b"], "x": [2]}), progress=False)
        repo.append("t", [("c", {"x": 3})], progress=False)
    assert [(w.filename, "lacks" in str(w.message) or "no value" in str(w.message))
            for w in seen] == [(__file__, True)] * 2


def test_pythons_own_errors_name_repository(repo: dl.Repository) -> None:
    with pytest.raises(TypeError, match=r"^Repository\.commit\(\) missing 1 required"):
        repo.commit("ds")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^Repository\.append\(\) takes 3 positional"):
        repo.append("ds", [], None)  # type: ignore[misc]
    assert dl.Repository.derive.__qualname__ == "Repository.derive"


def test_the_glob_hint_reads_names_with_an_s_at_either_end(
        tmp_path: Path, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for n in ("shard-000.tars", "shard-001.tars"):
        (tmp_path / n).write_bytes(b"")
    err = run("commit", "p", "--from", "shard-000.tars", "shard-001.tars", rc=1).err
    assert "'shard-001.tars' is a file: a pattern after --from is expanded" in err


def test_a_version_removed_after_a_listing_is_not_opened(repo: dl.Repository,
                                                         tmp_path: Path) -> None:
    """QA review62b: repo.datasets() marked every listed manifest as stored; one removed by
    another process afterwards still opened from the machine's cache."""
    v1 = repo.commit("t", [("a", {"x": 1})], progress=False)
    repo.append("t", [("b", {"x": 2})], progress=False)
    assert repo.dataset("t", v1.version).num_rows == 1  # cached on this machine
    fresh = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    assert fresh.datasets() == ["t"]
    other = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c2")
    other.rm("t", v1.version)
    with pytest.raises(dl.NotFoundError, match="was removed"):
        fresh.dataset("t", v1.version)


def test_torch_errors_other_than_dtypes_come_through(repo: dl.Repository) -> None:
    pipe = dl.from_iterable(range(4)).map(
        lambda i: {"x": torch.zeros(3, device="meta" if i == 2 else "cpu")}).batch(4)
    with pytest.raises(RuntimeError, match="device"):
        next(iter(pipe))


def test_zero_size_advice_keeps_dtype_and_inner_shape(repo: dl.Repository) -> None:
    import numpy as np

    with pytest.raises(dl.SchemaError, match=r"pa\.list_\(pa\.list_\(pa\.list_\(pa\.int32\(\), "
                                             r"2\), 4\)\)"):
        repo.commit("z", [("a", {"b": np.zeros((0, 4, 2), np.int32)})], progress=False)


def test_a_caption_missing_its_image_is_not_called_a_table(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "caps"
    d.mkdir()
    for i in range(1, 21):
        (d / f"img{i:02d}.jpg").write_bytes(b"JPEG")
        (d / f"img{i:02d}.txt").write_text(f"a photo {i}")
    (d / "img21.txt").write_text("its image failed to download")
    assert "A table of labels" not in run("commit", "caps", "--from", str(d)).err


def test_a_quoted_field_of_a_list_gets_the_list_advice(repo: dl.Repository) -> None:
    ann = pa.list_(pa.struct([("category_id", pa.int64())]))
    repo.commit("coco", pa.table({"__key__": ["a", "b"], "annotations": pa.array(
        [[{"category_id": 3}], []], ann)}), progress=False)
    with pytest.raises(dl.PredicateError, match="not a field of the list 'annotations'"):
        repo.dataset("coco").where('"annotations.category_id" = 3')


def test_every_mixins_method_names_repository(repo: dl.Repository) -> None:
    for call, name in ((lambda: repo.tag("x"), "tag"), (lambda: repo.diff("x"), "diff"),
                       (lambda: repo.versions(), "versions")):
        with pytest.raises(TypeError, match=rf"^Repository\.{name}\(\) missing"):
            call()  # type: ignore[call-arg]


def test_pad_collate_pads_without_the_ragged_warning(repo: dl.Repository) -> None:
    """QA docs62: pad_collate ran the default collate first, which warned of the very
    arrays it then padded (and used up the once-per-column warning)."""
    import warnings as w

    import numpy as np

    collate_checks._WARNED.discard("tok")
    pipe = dl.from_iterable([{"tok": np.arange(n)} for n in (1, 3, 2)], finite=True)
    with w.catch_warnings():
        w.simplefilter("error")
        b = next(iter(pipe.batch(3, collate=dl.pad_collate())))
    assert b["tok"].shape == (3, 3)
    with pytest.warns(UserWarning, match="column 'tok' holds arrays of different shapes"):
        next(iter(pipe.batch(3)))  # the plain batch still warns once


def test_pipeline_mixin_methods_name_pipeline() -> None:
    p = dl.from_iterable([{"tokens": [1, 2]}], finite=True)
    with pytest.raises(TypeError, match=r"^Pipeline\.pack\(\) takes"):
        p.pack(4, "tokens", 0)  # type: ignore[misc]


def test_pad_collate_warns_of_the_columns_it_cannot_pad(repo: dl.Repository) -> None:
    """QA review62c: pad_collate hid the ragged warning of every column, the ones it does
    not pad (or cannot: another width after the first axis) too."""
    import numpy as np

    rows = [{"image": np.zeros((4, 4 if i != 2 else 3, 3), np.uint8), "tokens": np.arange(i + 1)}
            for i in range(4)]
    pipe = dl.from_iterable(rows, finite=True)
    collate_checks._WARNED.discard("image")
    with pytest.warns(UserWarning, match="column 'image' holds arrays of different shapes"):
        b = next(iter(pipe.batch(4, collate=dl.pad_collate(columns=["tokens"]))))
    assert isinstance(b["image"], list) and b["tokens"].shape == (4, 4)
    collate_checks._WARNED.discard("image")
    with pytest.warns(UserWarning, match=r"pad_collate: column 'image' holds rows of shapes .* "
                                         r"so that batch gives it as a list"):
        next(iter(pipe.batch(4, collate=dl.pad_collate())))


def test_renamed_methods_still_pickle(repo: dl.Repository) -> None:
    import pickle

    for fn in (dl.Repository.tag, dl.Repository.rm, dl.Pipeline.pack, dl.Dataset.batch):
        assert pickle.loads(pickle.dumps(fn)) is fn
    with pytest.raises(TypeError, match=r"^Dataset\.batch\(\) missing"):
        repo.commit("d", [("a", {"x": 1})], progress=False)
        repo.dataset("d").batch()  # type: ignore[call-arg]


def test_a_hex_named_caption_missing_its_image_is_not_a_table(tmp_path: Path,
                                                             run: RunFn) -> None:
    import hashlib

    d = tmp_path / "caps"
    d.mkdir()
    for i in range(21):
        k = hashlib.sha256(str(i).encode()).hexdigest()[:16]
        if i < 20:
            (d / f"{k}.jpg").write_bytes(b"JPEG")
        (d / f"{k}.txt").write_text("a caption")
    assert "A table of labels" not in run("commit", "caps", "--from", str(d)).err


def test_a_zero_size_fixed_list_is_refused_not_stored_unreadable(repo: dl.Repository) -> None:
    """QA review62d: the advice for a (3, 0) tensor was a fixed-size list of size 0, which
    pyarrow writes but cannot read back: every column of the shard was lost."""
    import numpy as np

    with pytest.raises(dl.SchemaError, match=r"pa\.list_\(pa\.list_\(pa\.float32\(\)\)\)"):
        repo.commit("z", [("a", {"f": np.zeros((3, 0), np.float32)})], progress=False)
    schema = pa.schema([("f", pa.list_(pa.list_(pa.float32(), 0)))])
    with pytest.raises(dl.SchemaError, match="fixed-size list or binary of size 0"):
        repo.commit("z", [("a", {"f": [[], []]})], schema=schema, progress=False)
    with pytest.raises(dl.NotFoundError):
        repo.dataset("z")


def test_pad_collates_own_warning_is_not_used_up_by_batchs(repo: dl.Repository) -> None:
    import numpy as np

    rows = [{"image": np.zeros((4, 4 if i != 2 else 3, 3), np.uint8)} for i in range(4)]
    pipe = dl.from_iterable(rows, finite=True)
    collate_checks._WARNED.clear()
    with pytest.warns(UserWarning, match="batch\\(\\): column 'image'"):
        next(iter(pipe.batch(4)))
    with pytest.warns(UserWarning, match="pad_collate: column 'image'"):
        next(iter(pipe.batch(4, collate=dl.pad_collate())))
    from dload_arrow.pipeline.batching import default_collate

    collate_checks._WARNED.clear()
    with pytest.warns(UserWarning, match="column 'tok'"):  # "tokens" is not "tok"
        default_collate([{"tok": np.arange(n)} for n in (1, 2)], padded="tokens")


@pytest.mark.parametrize("keys", [
    [str(10000000 + i * 7919) for i in range(20)] + ["1234567"],  # ids of 8 and 7 digits
    [str(uuid.uuid5(uuid.NAMESPACE_DNS, str(i))) for i in range(21)],  # uuids
])
def test_a_caption_of_an_id_named_sample_missing_its_image_is_not_a_table(
        tmp_path: Path, run: RunFn, keys: list[str]) -> None:
    d = tmp_path / "caps"
    d.mkdir()
    for i, k in enumerate(keys):
        if i < 20:
            (d / f"{k}.jpg").write_bytes(b"JPEG")
        (d / f"{k}.txt").write_text("a caption")
    assert "A table of labels" not in run("commit", "caps", "--from", str(d)).err


@pytest.mark.parametrize("keys", [
    [f"{w}-{i:04d}" for w in ("horse", "cat") for i in range(10)] + ["horse-0099"],
    [f"frame-{i}" for i in range(995, 1015)] + ["frame-990"],
])
def test_keys_of_one_scheme_read_as_one_form(tmp_path: Path, run: RunFn,
                                             keys: list[str]) -> None:
    """QA review62e: '-' counted in an id gave horse-0001 and cat-0001 two forms."""
    d = tmp_path / "caps"
    d.mkdir()
    for k in keys[:-1]:
        (d / f"{k}.jpg").write_bytes(b"JPEG")
        (d / f"{k}.txt").write_text("a caption")
    (d / f"{keys[-1]}.txt").write_text("its image failed to download")
    assert "A table of labels" not in run("commit", "caps", "--from", str(d)).err


def test_zero_width_extension_and_binary_columns_are_refused(repo: dl.Repository) -> None:
    tensor = pa.fixed_shape_tensor(pa.float32(), (2, 0))
    storage = pa.array([[]], pa.list_(pa.float32(), 0))
    with pytest.raises(dl.SchemaError, match="of size 0"):
        repo.commit("t", pa.table({"f": pa.ExtensionArray.from_storage(tensor, storage)}),
                    progress=False)
    with pytest.raises(dl.SchemaError, match="of size 0"):
        repo.commit("b", pa.table({"h": pa.array([b""], pa.binary(0))}), progress=False)


def test_zero_width_tensors_nested_in_lists_or_structs_are_refused(
        repo: dl.Repository) -> None:
    """QA review62f: Arrow's tensor type is no pa.ExtensionType subclass; nested, it slipped
    past the check and the shard was unreadable."""
    tensor = pa.fixed_shape_tensor(pa.float32(), (2, 0))
    inner = pa.ExtensionArray.from_storage(tensor, pa.array([[], []], pa.list_(pa.float32(), 0)))
    for arr in (pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), inner),
                pa.StructArray.from_arrays([inner], ["t"])):
        with pytest.raises(dl.SchemaError, match="of size 0"):
            repo.commit("n", pa.table({"f": arr}), progress=False)


def test_hex_ids_joined_to_a_word_read_as_one_form(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "caps"
    d.mkdir()
    keys = [f"img{uuid.uuid5(uuid.NAMESPACE_DNS, str(i)).hex[:8]}" for i in range(21)]
    for k in keys[:-1]:
        (d / f"{k}.jpg").write_bytes(b"JPEG")
        (d / f"{k}.txt").write_text("a caption")
    (d / f"{keys[-1]}.txt").write_text("its image failed to download")
    assert "A table of labels" not in run("commit", "caps", "--from", str(d)).err


def test_key_forms_of_one_scheme_are_one() -> None:
    from dload_arrow.ingest.group_warnings import _form

    schemes = [[f"img{uuid.uuid5(uuid.NAMESPACE_DNS, str(i)).hex[:8]}" for i in range(30)],
               [f"{w}{i:04d}" for w in ("cat", "dog", "bee") for i in range(5)],
               [f"{w}-{i}" for w in ("horse", "cat") for i in (7, 99, 1000, 10000)],
               [str(uuid.uuid5(uuid.NAMESPACE_DNS, str(i))) for i in range(10)],
               [str(10**6 + i * 7919) for i in range(20)]]
    for keys in schemes:
        assert len({_form(k) for k in keys}) == 1, sorted({_form(k) for k in keys})
    assert _form("dataset_info") != _form("img_0001")
