"""Warnings about how files grouped into samples, given before any byte is read: keys that
print the same, a sample too large for this machine's memory, and a file that became a
sample of its own (a ``labels.csv`` beside images), or files of one sample split into several
(``x.jpg``, ``x.en.txt``, ``x.de.txt`` under the default split at the last dot)."""

from __future__ import annotations

import os
import re
import shlex
import unicodedata
import warnings
from collections import Counter
from typing import Any

from dload_arrow.errors import escaped, user_stacklevel
from dload_arrow.ingest.globs import exact_path
from dload_arrow.read.memory import MEMORY_LIMIT_ENV, available_memory
from dload_arrow.sizes import format_bytes

__all__ = ["COMMIT_MEMORY_FACTOR", "LargeSampleWarning", "warn_case_twins", "warn_dotted_keys",
           "warn_large_sample", "warn_lone_samples", "warn_split_columns",
           "warn_unicode_twins"]

#: Peak memory of a commit per byte of its largest sample: the value's Arrow copy, Parquet's
#: encoded page and its zstd output (a value is never split across pages) and the shard
#: buffer; 5.0x measured for one 200 MB file (bench/notes/speed-work.md, 28th session).
COMMIT_MEMORY_FACTOR = 5


class LargeSampleWarning(UserWarning):
    """A sample is so large that committing it may need more memory than is available."""


def warn_unicode_twins(groups: dict[str, dict[str, Any]], where: str) -> None:
    """Warn of keys that differ only in Unicode normalization ('café' composed, as Linux
    writes it, and decomposed, as macOS does): two samples whose keys print the same."""
    seen: dict[str, str] = {}
    twins = []
    for key in groups:
        if key.isascii():
            continue
        other = seen.setdefault(unicodedata.normalize("NFC", key), key)
        if other != key:
            twins.append((other, key))
    if twins:
        a, b = twins[0]
        more = f" (and {len(twins) - 1} more pairs)" if len(twins) > 1 else ""
        warnings.warn(
            f"{where}: keys {a!a} and {b!a} differ only in Unicode normalization{more}: they "
            "print the same but are two samples, and ds.get() finds one or the other by how the "
            "key is typed; if they are meant to be one, give their names one form (in a folder: "
            "`convmv -r -f utf8 -t utf8 --nfc --notest DIR`)",
            stacklevel=user_stacklevel())


def warn_case_twins(groups: dict[str, dict[str, Any]], where: str) -> bool:
    """Warn of keys that differ only in case whose samples hold different columns
    (``IMG_0001.JPG`` beside ``img_0001.cls``, QA vision62): extensions are matched in any
    case, keys are not, so an image and its label became two half-empty samples."""
    seen: dict[str, str] = {}
    twins = []
    for key in groups:
        other = seen.setdefault(key.casefold(), key)
        if other != key and not set(groups[other]) & set(groups[key]):
            twins.append((other, key))
    if not twins:
        return False
    a, b = twins[0]
    more = f" (and {len(twins) - 1} more pairs)" if len(twins) > 1 else ""
    warnings.warn(
        f"{where}: keys {_q(a)} (columns {sorted(groups[a])}) and {_q(b)} (columns "
        f"{sorted(groups[b])}) differ only in case{more}: keys are case-sensitive (extensions "
        "are not), so they are two samples, each lacking the other's columns; if their files "
        "belong to one sample, give them names that differ only in the extension",
        stacklevel=user_stacklevel())
    return True


def warn_split_columns(groups: dict[str, dict[str, Any]], where: str) -> None:
    """Warn of two columns that never occur in one sample and together cover every sample
    (QA vision62: labels in ``.cls`` and ``.label``, or images as ``.jpg`` and ``.png``: one
    field stored as two half-null columns, found only when training read a null). Not asked
    where keys differing in case split samples (``warn_case_twins`` says that)."""
    if len(groups) < 10:  # (a handful of files of different kinds is no dataset of them)
        return
    few = max(2, len(groups) // 10)  # (fewer: a stray file, warn_lone_samples' case)
    members: dict[str, set[str]] = {}
    for key, files in groups.items():
        for column in files:
            members.setdefault(column, set()).add(key)
    partial = sorted(c for c, m in members.items() if few <= len(m) <= len(groups) - few)
    for i, a in enumerate(partial[:_SHOWN * 2]):
        for b in partial[i + 1:_SHOWN * 2]:
            if len(members[a]) + len(members[b]) == len(groups) and not members[a] & members[b]:
                warnings.warn(
                    f"{where}: columns {a!r} ({len(members[a])} samples) and {b!r} "
                    f"({len(members[b])}) never occur in one sample and together cover all "
                    f"{len(groups)}: each is null in the other's rows. If they are one field "
                    f"under two extensions, give the files one (or convert them) to store "
                    "one column", stacklevel=user_stacklevel())
                return


def warn_large_sample(groups: dict[str, dict[str, Any]], where: str) -> None:
    """Warn before any byte is read when the largest sample's commit would need more memory
    than this process has (the commit would otherwise be killed partway, often silently)."""
    if not groups:
        return
    key, files = max(groups.items(), key=lambda kv: sum(e.size for e in kv[1].values()))
    size = sum(e.size for e in files.values())
    if size < 2**20:  # nothing a machine could lack; and no /proc read for small data
        return
    free = available_memory()
    need = COMMIT_MEMORY_FACTOR * size
    if free is None or need <= free:
        return
    biggest = max(files.values(), key=lambda e: e.size)
    warnings.warn(
        f"{where}: sample {_q(key)} holds {format_bytes(size)} (largest file "
        f"{_q(biggest.name)}, "
        f"{format_bytes(biggest.size)}); committing it needs about {format_bytes(need)} of "
        f"memory ({COMMIT_MEMORY_FACTOR}x, one value is encoded whole) and this process has "
        f"{format_bytes(free)} available, so the commit may be killed for lack of memory "
        "(nothing is published then); commit on a machine with more memory, split the file, "
        f"or leave it out with --exclude (exclude=[...] in Python); {MEMORY_LIMIT_ENV} sets "
        "the memory this check assumes",
        LargeSampleWarning, stacklevel=user_stacklevel())


# What a table of labels or notes beside the files is written as (a lone .png among .jpg
# files is a sample all the same: QA review58b)
_TABLES = frozenset({"csv", "tsv", "json", "jsonl", "ndjson", "parquet", "txt", "md", "xlsx",
                     "xls", "yaml", "yml", "xml"})


def warn_lone_samples(groups: dict[str, dict[str, Any]], where: str) -> None:
    """Warn of a few samples made only of table or text files whose columns hardly any other
    sample has, among many samples: most often a table of labels (``labels.csv``, or one per
    split folder) beside the files it describes, which becomes a row of its own (QA user58)
    instead of labelling them."""
    if len(groups) < 10:  # (a handful of files of different kinds is no dataset of them)
        return
    few = max(1, len(groups) // 10)
    counts: dict[str, int] = {}
    for files in groups.values():
        for column in files:
            counts[column] = counts.get(column, 0) + 1

    def lacks(files: dict[str, Any]) -> list[str]:  # the columns (nearly) every other has
        return sorted(c for c, n in counts.items() if c not in files and n >= len(groups) - few)

    usual = Counter(_form(k) for k in groups).most_common(1)[0][0]  # a# for img01..img20
    words, alike = Counter(_word_form(k) for k in groups).most_common(1)[0]
    uniform = alike >= len(groups) - few  # (wells A01..H12: G05's 'a#' beside A01's '#')

    def unlike(key: str) -> bool:  # (train2017 beside 000000000001: a word, not an id)
        return _form(key) != usual or (uniform and _word_form(key) != words
                                       and _word_form(key) != _form(key))

    lone = [(key, files) for key, files in groups.items() if all(c in _TABLES for c in files)
            and (all(counts[c] <= few for c in files)  # a key named like the others lacking
                 or (lacks(files) and unlike(key)))]  # an image: a failed download
    if not lone or len(lone) > few:
        return
    key, files = lone[0]
    name = next(iter(files.values())).name
    top = max(counts, key=lambda c: counts[c])  # the files' most common column (jpg)
    more = f" (and {len(lone) - 1} more like it)" if len(lone) > 1 else ""
    others = len(groups) - len(lone)
    how = (f"shares no column with the other {others} samples: it is committed as a sample "
           f"of its own, key {_q(key)}{more}, its column(s) {sorted(files)} empty in the "
           "other rows" if all(counts[c] <= few for c in files) else  # (QA vision62: dataset_info)
           f"lacks the column(s) {lacks(files)} the other {others} samples have: it is "
           f"committed as a sample of its own, key {_q(key)}{more}")
    warnings.warn(
        f"{where}: {_q(name)} {how}. A table of labels is not joined onto the files: leave "
        f"it out (--exclude {shlex.quote(exact_path(name))}; exclude=[...] in Python), commit it "
        "as a table (`dload commit NAME --from FILE --key-column COLUMN`), and join the two "
        f"in SQL (a file's key is its name without the extension: on t.__key__ = "
        f"f.__key__ || '.{top}' when the table names files); or give each file its label "
        "beside it (x.jpg with x.cls)",
        stacklevel=user_stacklevel())


def _form(key: str) -> str:
    """A key's form: uuids, and runs of letters and digits holding a digit, as # (ids of any
    length and words numbered alike: ``img0012``, ``face0001``, ``91032ad7``, ``b04965e``),
    runs of letters only as a (``img_0012`` -> ``a_#``, ``dataset_info`` -> ``a_a``)."""
    key = _UUID.sub("#", key.rpartition("/")[2])
    return _RUN.sub(lambda m: "#" if any(ch.isdigit() for ch in m.group()) else "a", key)


def _word_form(key: str) -> str:
    """A key's form with a word numbered (a run of letters, one not a hex digit among them,
    then a digit) as a# (``train2017``, ``labels_v2`` -> ``a_a#``; ``cat0001``), unlike an id
    (``000000000001``, ``img_0001``); a run of hex digits, a short sha or ``face0001``, as in
    :func:`_form` (QA review63b: the label files :func:`_form` reads like the ids)."""
    def run(m: re.Match[str]) -> str:
        text = m.group()
        if not any(ch.isdigit() for ch in text):
            return "a"
        return "a#" if text[0].isalpha() and not _HEX.fullmatch(text) else "#"

    return _RUN.sub(run, _UUID.sub("#", key.rpartition("/")[2]))


_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_RUN = re.compile(r"[^\W_]+")  # letters and digits (a hex word's letters and digits apart
# gave short shas ten forms and face0001 another than cat0001: QA review63)


_SIBLINGS = 32  # more dotted keys on one key: a sequence (shot010.0001.exr), not its views
_DOTTED_SAID: set[tuple[str, tuple[str, ...]]] = set()  # one warning for a set of archives
_SHOWN = 10


def warn_dotted_keys(groups: dict[str, dict[str, Any]], split: str, where: str) -> bool:
    """Warn when, split at the last dot, many samples' keys are another sample's key plus a
    dotted suffix (``000000.en`` and ``000000.de`` beside ``000000``): WebDataset's naming of
    several captions or views of one sample (``000000.en.txt``), which ``--split first``
    keeps together (QA clip60: every image became three samples, none with its caption).

    Only where ``--split first`` gives exactly that key (no dot in it: ``cam1.000`` would
    become ``cam1``), and not for a sequence of many files on one key (frames); said once per
    folder and column set (a set of WebDataset shards warns once). Whether it applies (the
    columns it splits are then not warned of as one field under two extensions: QA ocr66)."""
    if split != "last":
        return False
    siblings: dict[str, list[str]] = {}
    for k in groups:
        base = k.rpartition(".")[0]
        if "." in k.rpartition("/")[2] and base in groups and "." not in base.rpartition("/")[2]:
            siblings.setdefault(base, []).append(k)
    dotted = sum(len(v) for v in siblings.values())
    if dotted < max(2, len(groups) // 10) or max(map(len, siblings.values())) > _SIBLINGS:
        return False
    base, mine = next(iter(siblings.items()))
    columns = sorted([*groups[base], *(f"{k[len(base) + 1:]}.{c}" for k in mine
                                       for c in groups[k])])
    said = (os.path.dirname(where), tuple(columns))
    if said in _DOTTED_SAID:
        return True
    _DOTTED_SAID.add(said)
    shown = ", ".join(columns[:_SHOWN]) + (f", ... {len(columns) - _SHOWN} more"
                                          if len(columns) > _SHOWN else "")
    names = ", ".join(repr(e.name) for k in (base, mine[0]) for e in groups[k].values())
    warnings.warn(
        f"{where}: {dotted} of the {len(groups)} samples are another sample's key plus a "
        f"suffix ({_q(mine[0])} beside {_q(base)}, from {names}): split at the last dot, "
        "x.en.txt is sample x.en's column txt. If such files belong to one sample (WebDataset's "
        "naming: a key ends at the first dot), commit with --split first (split='first' in "
        f"Python): sample {_q(base)} then has columns {shown}",
        stacklevel=user_stacklevel())
    return True


def _q(text: str) -> str:
    """A key or a file name in a warning as written (CJK, accents), quoted, its control
    characters escaped (QA ocr66: `ascii()` made a suggested --exclude match nothing)."""
    return f"'{escaped(text)}'"
