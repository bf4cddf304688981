"""``Globs``: which files ``--include`` / ``--exclude`` patterns select, and which matched none.

A pattern (``fnmatch``: ``*``, ``?``, ``[...]``; ``*`` also crosses ``/``) selects a file when it
matches:

- the file's path inside the folder or archive (``cats/001.jpg``) or its name (``001.jpg``),
  with the extension as written or lowercased: extensions compare case-insensitively
  (``UPPER.JPG`` is column ``jpg``), so ``*.jpg`` takes ``UPPER.JPG`` and ``*.JPG`` ``x.jpg``;
- or a directory on the file's path, by its path (``cats/2024``) or its name (``2024``): as in
  rsync, .gitignore and tar, ``--exclude cats`` and ``--exclude cats/`` leave out everything
  under ``cats/``.

A pattern ending in ``/`` matches directories only; a leading ``./`` is ignored. A leading
``/`` anchors the pattern to the top of the folder or archive, as in .gitignore and rsync:
``--exclude /cats`` leaves out the top level's ``cats/``, not ``pets/cats/`` (the path from
the top is the only form it is matched against), and there, as in .gitignore, ``*`` and
``?`` do not cross ``/`` (``/*.jpg``: the top level's) while ``**`` does. An anchored
pattern without wildcards (``[*]`` is a literal ``*``) is one exact path, compared as written
(``/x.JPG`` takes ``x.JPG``, not ``x.jpg``): the one way to pick one of two files whose
extensions differ only in case, which give the same column. A pattern
that matched no file at all is almost always a mistake: :meth:`Globs.unused` names those, and
:meth:`Globs.warn_unused` warns (:class:`GlobWarning`).
"""

from __future__ import annotations

import fnmatch
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dload_arrow.errors import NotFoundError, user_stacklevel

__all__ = ["GlobWarning", "Globs", "LeftOutError", "exact_path", "glob_list"]


class LeftOutError(NotFoundError):
    """--include/--exclude left out every file of a source (one archive of a set is then
    skipped, as an empty one is: ``archive_set.py``)."""


class GlobWarning(UserWarning):
    """An ``--include`` / ``--exclude`` pattern matched no file."""


def _lowered(name: str) -> list[str]:
    """``name`` with its extension lowercased, from the first dot and from the last."""
    directory, _, base = name.rpartition("/")
    out = []
    for cut in (base.find("."), base.rfind(".")):
        if cut > 0:
            lowered = base[:cut] + base[cut:].lower()
            out.append(f"{directory}/{lowered}" if directory else lowered)
    return out


Forms = tuple[list[str], list[str], list[str]]


def _candidates(name: str, anchored: bool = False) -> Forms:
    """``(file forms, lowered file forms, directory forms)`` a pattern is matched against;
    ``anchored`` (a pattern with a leading ``/``): the paths from the top only."""
    directory, _, base = name.rpartition("/")
    lowered = _lowered(name)
    dirs: list[str] = []
    if directory:
        parts = directory.split("/")
        dirs = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        dirs += [] if anchored else parts
    if anchored:
        return [name], lowered, dirs
    return ([name, base], list(dict.fromkeys(lowered + [n.rpartition("/")[2] for n in lowered])),
            list(dict.fromkeys(dirs)))


def _anchored_regex(pattern: str) -> str:
    """A pattern anchored with a leading ``/`` as .gitignore reads it: ``*`` and ``?`` stay
    within one directory (``/*.jpg`` is the top level's), ``**`` crosses them (``/**/x``
    takes ``x`` at any depth), ``[...]`` is a set as in fnmatch."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (j := _set_end(pattern, i)) > 0:
            body = pattern[i + 1 : j].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else
                              "\\" + body if body.startswith("^") else body) + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "(?s:" + "".join(out) + r")\Z"


def _set_end(pattern: str, i: int) -> int:
    """Where the ``[...]`` set opened at ``i`` closes, as fnmatch finds it (a ``]`` first,
    after an optional ``!``, is a member); -1: none, the ``[`` is a character."""
    j = i + 1
    j += pattern.startswith("!", j)
    j += pattern.startswith("]", j)
    return pattern.find("]", j)


Compiled = list[tuple[re.Pattern[str], bool]]  # a regex, and whether it is a lowered form


def exact_path(name: str) -> str:
    """The anchored pattern that selects the file ``name`` alone (``/x.JPG``, not ``x.jpg``);
    its wildcard characters as one-character sets (``[*]``)."""
    return "/" + re.sub(r"([*?\[])", r"[\1]", name)


def _literal(pattern: str) -> str | None:
    """The path an anchored ``pattern`` names when it has no wildcard (a one-character set
    ``[*]`` is that character, a ``[`` that opens no set is itself); None otherwise."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c in "*?":
            return None
        if c == "[" and (j := _set_end(pattern, i)) > 0:
            if j != i + 2 or pattern[i + 1] == "!":
                return None
            c, i = pattern[i + 1], j
        out.append(c)
        i += 1
    return "".join(out)



def _compile(pattern: str, anchored: bool = False) -> Compiled:
    """The pattern as written, then with its extension lowercased (matched against lowered
    file forms: ``*.JPG`` takes ``x.jpg``, ``*.jpg`` takes ``X.JPG``); a leading ``**/`` also
    without it (``**/*.jpg`` takes ``top.jpg``)."""
    translate = _anchored_regex if anchored else fnmatch.translate
    forms = [pattern]
    while not anchored and forms[-1].startswith("**/"):  # as in .gitignore: '**/x' is x at
        forms.append(forms[-1][3:])                        # any depth, the top level too
    return [(re.compile(translate(p)), lowered) for f in forms
            for p, lowered in [(f, False), *((x, True) for x in _lowered(f))]]


def glob_list(value: Sequence[str] | str | None, option: str) -> tuple[str, ...]:
    """``include=`` / ``exclude=`` as a tuple of patterns: one pattern given as a str is
    one pattern (not its characters); anything but str patterns is refused (TypeError)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, bytes | Mapping):
        patterns = tuple(value)
        if all(isinstance(p, str) for p in patterns):
            return patterns
    raise TypeError(
        f"{option}= takes glob patterns as str (one, or a list of them), got "
        f"{type(value).__name__} {value!r:.80}: e.g. {option}=['*.jpg', 'labels/']"
    )


class Globs:
    """The ``include`` / ``exclude`` patterns of one input, remembering which ones matched.

    Args:
        include: patterns of files to keep (none: every file).
        exclude: patterns of files to leave out (wins over ``include``).
    """

    def __init__(self, include: Sequence[str] | str = (), exclude: Sequence[str] | str = ()
                 ) -> None:
        self.include = glob_list(include, "include")
        self.exclude = glob_list(exclude, "exclude")
        # (option, pattern) -> (regexes, directories only, anchored at the top, exact path)
        self._patterns: dict[tuple[str, str], tuple[Compiled, bool, bool, bool]] = {}
        for option, patterns in (("include", self.include), ("exclude", self.exclude)):
            for p in patterns:
                body = p[2:] if p.startswith("./") else p
                anchored = body.startswith("/")
                body = body.lstrip("/") if anchored else body
                exact = _literal(body.rstrip("/")) if anchored else None
                rxs = (_compile(body.rstrip("/"), anchored) if exact is None
                       else [(re.compile(re.escape(exact) + r"\Z"), False)])
                self._patterns[option, p] = (rxs, body.endswith("/"), anchored, exact is not None)
        self._used: set[tuple[str, str]] = set()
        self._seen = 0
        self._example: str | None = None

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def __call__(self, name: str) -> bool:
        """Whether the file ``name`` (a ``/``-separated relative path) is selected."""
        self._seen += 1
        if self._example is None and not any(p.startswith(".") for p in name.split("/")):
            self._example = name
        if not self._patterns:
            return True
        forms = {a: _candidates(name, a) for a in (False, True)}
        hits = {key for key, (rxs, dir_only, anchored, exact) in self._patterns.items()
                if _hit(rxs, *_only_dirs(_as_written(forms[anchored], exact), dir_only))}
        self._used |= hits
        included = not self.include or any(option == "include" for option, _ in hits)
        return included and not any(option == "exclude" for option, _ in hits)

    def excludes_dir(self, path: str) -> bool:
        """Whether an exclude pattern drops the whole directory ``path`` (``lost+found``):
        nothing under it is listed, so an unreadable one is no error."""
        name = path.rstrip("/") + "/."
        hits = {key for key, (rxs, _, anchored, _) in self._patterns.items()
                if key[0] == "exclude" and _hit(rxs, [], [], _candidates(name, anchored)[2])}
        self._used |= hits
        return bool(hits)

    def note_skipped(self, name: str) -> None:
        """Count the patterns matching ``name``, a link, special file or hidden folder the
        source skips anyway, as used: ``--exclude link.jpg`` did match, and it is no mistake
        (a ``name`` ending in ``/`` is a folder)."""
        folder = name.endswith("/")
        for key, (rxs, dir_only, anchored, exact) in self._patterns.items():
            files = ([], [], []) if folder else _only_dirs(
                _as_written(_candidates(name, anchored), exact), dir_only)
            dirs = _candidates(name.rstrip("/") + "/.", anchored)[2]
            if _hit(rxs, *files) or _hit(rxs, [], [], dirs):
                self._used.add(key)

    def unused(self) -> list[tuple[str, str]]:
        """``(option, pattern)`` of every pattern that matched none of the files seen."""
        return [key for key in self._patterns if key not in self._used]

    def unused_text(self) -> str:
        """`` --exclude 'x' matched no file;`` for each unused pattern (empty: none)."""
        return "".join(f" --{option} {p!r} matched no file;" for option, p in self.unused())

    def describe_unused(self, where: str) -> list[str]:
        """One sentence per unused pattern, saying what patterns match and how to check."""
        seen = (f" (e.g. {self._example!r})" if self._example is not None
                else "" if self._seen else " (it holds no file)")
        return [
            f"--{option} {pattern!r} ({option}= in Python) matched no file of {where!r}; a "
            f"pattern matches a file's path there{seen}, its name, or a directory on its "
            "path: check the pattern"
            for option, pattern in self.unused()
        ]

    def unused_patterns(self) -> list[dict[str, str]]:
        """The patterns that matched no file, for a script: ``{"option", "pattern"}``."""
        return [{"option": option, "pattern": pattern} for option, pattern in self.unused()]

    def unused_report(self, where: str) -> dict[str, list[Any]]:
        """``unused_globs`` (sentences) and ``unused_patterns`` of a commit's report."""
        return {"unused_globs": self.describe_unused(where),
                "unused_patterns": self.unused_patterns()}

    def warn_unused(self, where: str) -> None:
        """A :class:`GlobWarning` for each pattern that matched no file."""
        for text in self.describe_unused(where):
            warnings.warn(text, GlobWarning, stacklevel=user_stacklevel())


def _as_written(forms: Forms, exact: bool) -> Forms:
    return (forms[0], [], forms[2]) if exact else forms


def _only_dirs(forms: Forms, dir_only: bool) -> Forms:
    return ([], [], forms[2]) if dir_only else forms


def _hit(rxs: Compiled, files: list[str], lowered: list[str], dirs: list[str]) -> bool:
    """Whether a pattern as written matches a file or directory form, or a lowered pattern
    matches a lowered file form."""
    return any(rx.match(c) for rx, low in rxs for c in (lowered if low else files + lowered + dirs))
