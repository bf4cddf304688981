"""rm of the version ``latest`` points at steps latest back to the version it pointed at
before (the log's moves of it), not to whichever remaining version was committed last."""

from __future__ import annotations

from dload_arrow import Repository


def _rows(tag: str, n: int = 3) -> list[tuple[str, dict[str, str]]]:
    return [(f"{tag}{i}", {"txt": f"{tag} {i}"}) for i in range(n)]


def test_rm_after_a_rollback_steps_back_to_the_rolled_back_to_version(repo: Repository) -> None:
    good = repo.commit("d", _rows("good")).version
    bad = repo.commit("d", _rows("bad")).version
    assert repo.commit("d", _rows("good")).version == good  # the rollback: latest -> good
    assert repo.dataset("d").version == good
    more = repo.append("d", _rows("more")).version
    assert more not in (good, bad)
    repo.rm("d", more)
    assert repo.dataset("d").version == good  # not bad, the newest remaining by first commit
    assert sorted(r["__key__"] for r in repo.dataset("d").to_arrow().to_pylist()) == \
        sorted(k for k, _ in _rows("good"))
    repo.rm("d", good)  # then the one before that
    assert repo.dataset("d").version == bad


def test_rm_of_a_version_latest_never_held_leaves_latest(repo: Repository) -> None:
    first = repo.commit("d", _rows("a")).version
    second = repo.commit("d", _rows("b")).version
    repo.rm("d", first)
    assert repo.dataset("d").version == second


def test_a_removed_version_or_its_tag_says_what_happened(repo: Repository) -> None:
    import pytest

    from dload_arrow.errors import NotFoundError

    old = repo.commit("d", _rows("a")).version
    repo.tag("d", old, "v1")
    repo.commit("d", _rows("b"))
    repo.rm("d", "v1")
    with pytest.raises(NotFoundError, match=rf"tag 'v1' was deleted by .* when it pointed at "
                                            rf"{old[:12]}"):
        repo.dataset("d", "v1")
    with pytest.raises(NotFoundError, match=rf"version {old[:12]} was removed by .*"
                                            rf"`dload log d@{old[:12]}`"):
        repo.dataset("d", old[:8])
    with pytest.raises(NotFoundError, match="list them with `dload versions d`"):
        repo.dataset("d", "never")


def test_an_rm_cut_off_after_deleting_latest_says_to_run_it_again(repo: Repository) -> None:
    """rm of a dataset deletes its refs first, then its manifests: cut off in between (a
    kill), the dataset is half removed, which is what the error says (not an unfinished
    commit), and rm again finishes it."""
    import pytest

    from dload_arrow.errors import NotFoundError
    from dload_arrow.store.refs import delete_ref
    from dload_arrow.store.removals import record_removal

    for tag in ("a", "b"):
        v = repo.commit("d", _rows(tag)).version
        record_removal(repo.storage, "d", v, repo.manifest("d", v))  # rm's first steps,
    delete_ref(repo.storage, "d", "latest")  # then the process died
    with pytest.raises(NotFoundError, match=r"half removed: an rm deleted its latest .* "
                                            r"2 version\(s\) left .*; run `dload rm d --yes`"):
        repo.dataset("d")
    assert len(repo.rm("d")) == 2
    with pytest.raises(NotFoundError, match="was removed"):
        repo.dataset("d")


def test_ls_of_a_root_whose_datasets_were_all_removed_says_so(local_root: str,
                                                              cache_dir: str) -> None:
    import subprocess
    import sys

    repo = Repository.open(local_root, cache_dir=cache_dir)
    repo.commit("d", _rows("a"))
    repo.rm("d")
    got = subprocess.run([sys.executable, "-m", "dload_arrow.cli", "ls", "--root", local_root],
                         capture_output=True, text=True, check=True)
    assert "every dataset it held was removed (1: d); `dload log NAME`" in got.stderr
    assert "mistyped" not in got.stderr


def test_a_version_left_unpublished_after_an_rm_is_not_called_half_removed(
        repo: Repository) -> None:
    """A manifest with no ref and no removal record, after the dataset was removed once: a
    commit that stopped before publishing, which rm must not be told to delete."""
    import pytest

    from dload_arrow.errors import NotFoundError
    from dload_arrow.store.refs import delete_ref

    repo.commit("d", _rows("a"))
    repo.rm("d")
    repo.commit("d", _rows("b"))
    delete_ref(repo.storage, "d", "latest")
    with pytest.raises(NotFoundError, match=r"1 unpublished version\(s\)") as e:
        repo.dataset("d")
    assert "half removed" not in str(e.value)


def test_the_same_rows_left_unpublished_after_an_rm_are_not_called_half_removed(
        repo: Repository) -> None:
    """The same rows committed again after a finished rm get the same id, which has a removal
    record; a commit of them that stopped before publishing is still an unfinished commit."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import pytest

    from dload_arrow.errors import NotFoundError

    repo.commit("d", _rows("a"))
    repo.rm("d")
    time.sleep(0.05)  # (file times tick coarsely)
    code = ("import sys\nfrom dload_arrow import Repository\n"
            f"Repository.open(sys.argv[1]).commit('d', {_rows('a')!r})")
    done = subprocess.run([sys.executable, "-c", code, repo.storage.url],  # the same id
                          env={**os.environ, "DLOAD_CRASH_AT": "manifest"}, timeout=120)
    assert done.returncode == -signal.SIGKILL  # stopped after storing its manifest
    with pytest.raises(NotFoundError, match=r"1 unpublished version\(s\)") as e:
        repo.dataset("d")
    assert "half removed" not in str(e.value)
