"""The sha256 that follows a file while it is written equals the whole file's."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dload_arrow.read.hashing import FollowingHash, sha256_file


@settings(max_examples=20, deadline=None)
@given(pieces=st.lists(st.binary(min_size=0, max_size=300_000), max_size=12),
       pause=st.sampled_from([0.0, 0.001, 0.005]))
def test_following_a_growing_file_gives_its_sha256(tmp_path_factory: object, pieces: list[bytes],
                                                   pause: float) -> None:
    path = Path(tmp_path_factory.mktemp("h")) / "f.tmp"  # type: ignore[attr-defined]
    path.write_bytes(b"")
    with FollowingHash(str(path)) as follower:
        def write() -> None:
            with open(path, "wb") as f:
                for p in pieces:
                    f.write(p)
                    f.flush()
                    time.sleep(pause)

        writer = threading.Thread(target=write)
        writer.start()
        writer.join()
        got = follower.finish()
    data = b"".join(pieces)
    assert got == hashlib.sha256(data).hexdigest() == sha256_file(str(path))


def test_a_file_replaced_while_followed_is_hashed_whole(tmp_path: Path) -> None:
    path = tmp_path / "f.tmp"
    path.write_bytes(b"x" * 1000)
    with FollowingHash(str(path)) as follower:
        time.sleep(0.05)  # the follower has read the first version
        path.write_bytes(b"y" * 10)  # truncated and rewritten: sizes no longer agree
        got = follower.finish()
    assert got == hashlib.sha256(b"y" * 10).hexdigest()
