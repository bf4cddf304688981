"""QA multimodal64 (F1): str and bytes inside a struct, list or map column are one kind per
field, as at the top level. The mix was stored silently as binary: every text value of a
document's segments came back as bytes, a path given for an image's bytes as the path's."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

import dload_arrow as dl


@pytest.fixture
def repo(local_root: str) -> dl.Repository:
    return dl.Repository.open(local_root)


@pytest.mark.parametrize("first,later,path", [
    ({"segments": [{"kind": "text", "text": "hello"}]},
     {"segments": [{"kind": "image", "text": b"\x89PNG"}]}, "segments[].text"),
    ({"seg": {"image": b"\xff\xd8"}}, {"seg": {"image": "/data/img.jpg"}}, "seg.image"),
    ({"blobs": [b"x"]}, {"blobs": ["x"]}, "blobs[]"),
    ({"m": {"a": {"s": "t"}}}, {"m": {"a": {"s": b"t"}}}, "m.a.s"),
])
def test_a_nested_mix_of_str_and_bytes_is_refused(repo: dl.Repository, first: dict[str, object],
                                                  later: dict[str, object], path: str) -> None:
    with pytest.raises(dl.SchemaError, match=re.escape(f"at {path}, but that field holds")):
        repo.commit("d", [("a", first), ("b", later)])
    assert repo.datasets() == []


def test_an_append_of_the_other_kind_is_refused_and_one_kind_stays_as_given(
        repo: dl.Repository) -> None:
    docs = [("a", {"segments": [{"kind": "text", "text": "hello", "image": None},
                                {"kind": "image", "text": None, "image": b"\x89PNG"}],
                   "tags": {"lang": "en"}})]
    repo.commit("docs", docs)
    assert repo.dataset("docs").get("a")["segments"] == docs[0][1]["segments"]
    with pytest.raises(dl.SchemaError, match=r"holds bytes at segments\[\]\.text, but that "
                                             r"field holds text \(str\)"):
        repo.append("docs", [("b", {"segments": [{"kind": "text", "text": b"hi", "image": None}],
                                    "tags": {"lang": "de"}})])
    with pytest.raises(dl.SchemaError, match=r"holds str at segments\[\]\.image"):
        repo.append("docs", [("c", {"segments": [{"kind": "image", "text": None,
                                                  "image": "/data/x.jpg"}],
                                    "tags": {"lang": "de"}})])
    repo.append("docs", [("d", {"segments": [], "tags": {"lang": "fr"}})])
    assert [r["__key__"] for r in repo.dataset("docs").samples()] == ["a", "d"]


def test_a_map_column_is_walked(repo: dl.Repository) -> None:
    schema = pa.schema([("__key__", pa.string()), ("m", pa.map_(pa.string(), pa.binary()))])
    repo.commit("maps", [("a", {"m": [("k", b"v")]})], schema=schema)
    with pytest.raises(dl.SchemaError, match=r"holds str at m\{value\}"):
        repo.append("maps", [("b", {"m": [("k", "v")]})])


def test_a_dotted_column_name_says_it_is_a_field(repo: dl.Repository) -> None:
    """QA multimodal64 (F2): columns=['meta.score'] said only 'no column'."""
    repo.commit("mm", pa.table({"key": ["a"], "meta": [{"score": 1.0, "lang": "en"}]}), key="key")
    with pytest.raises(dl.SchemaError, match=r"'meta.score' is a field of the column 'meta'.*"
                                             r"columns=\[.meta.\].*SELECT .+meta.+score.\] FROM"):
        repo.dataset("mm").to_arrow(columns=["meta.score"])


def test_an_append_lacking_a_struct_field_warns_naming_its_path(repo: dl.Repository) -> None:
    """QA multimodal64 (F4): a missing top-level column was warned of, a missing field of a
    struct (the image payload of each segment) was filled with nulls without a word."""
    seg = pa.struct([("kind", pa.string()), ("text", pa.string()), ("image", pa.binary())])
    repo.commit("mm", pa.table({"key": ["a"], "segments": pa.array(
        [[{"kind": "image", "text": None, "image": b"\x89PNG"}]], pa.list_(seg))}), key="key")
    less = pa.struct([("kind", pa.string()), ("text", pa.string())])
    with pytest.warns(UserWarning, match=r"lacks column\(s\) or field\(s\) "
                                         r"\['segments\[\]\.image'\]"):
        repo.append("mm", pa.table({"key": ["c"], "segments": pa.array(
            [[{"kind": "image", "text": None}]], pa.list_(less))}), key="key")
    assert repo.dataset("mm").get("c")["segments"] == [
        {"kind": "image", "text": None, "image": None}]


def test_a_null_field_names_its_path_and_a_type_for_every_sample(repo: dl.Repository) -> None:
    """QA multimodal64 (F3): the advice's type was the failing sample's alone (text: null),
    which refused every earlier sample, and blamed the whole column."""
    def docs() -> object:
        for i in range(1100):  # text-only documents, more than the 1,024 typed from
            yield f"d{i:05d}", {"segments": [{"kind": "text", "text": f"t{i}", "image": None}]}
        yield "zimg", {"segments": [{"kind": "image", "text": None, "image": b"\x89PNG"}]}

    with pytest.warns(UserWarning, match="segments"), pytest.raises(
            dl.SchemaError, match=r"segments\[\]\.image was None .* struct<kind: string, text: "
                                  r"string, image: binary>") as e:
        repo.commit("mm", docs())
    assert "text: null" not in str(e.value)
    seg = pa.struct([("kind", pa.string()), ("text", pa.string()), ("image", pa.binary())])
    repo.commit("mm", docs(), schema=pa.schema([("segments", pa.list_(seg))]))
    assert repo.dataset("mm").get("zimg")["segments"][0]["image"] == b"\x89PNG"


def test_appended_samples_lacking_a_struct_field_warn_naming_it(repo: dl.Repository) -> None:
    """QA review64b (F8): an appended table lacking a struct's field was warned of, samples
    lacking it were not."""
    repo.commit("d", [("a", {"seg": [{"kind": "image", "image": b"\x89PNG"}], "x": 1})])
    with pytest.warns(UserWarning, match=r"no value in column\(s\) \['seg\[\]\.image'\]"):
        repo.append("d", [("b", {"seg": [{"kind": "text"}], "x": 2})])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a field holding a value somewhere: no warning
        repo.append("d", [("c", {"seg": [{"kind": "text"}, {"kind": "image", "image": b"x"}],
                                 "x": 3})])
