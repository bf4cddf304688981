"""A shard's GET straight over ``http.client``, into the cache file, hashed as it arrives.

Through s3fs, a shard's bytes pass aiohttp's parser on fsspec's single event-loop thread, which
copies every piece into a new ``bytes`` object while holding the GIL, for every download in
flight at once: a cold epoch spent about a second of CPU on that thread alone (bench/notes/
speed-work.md, "Thirteenth session"). Here each download runs on its own fetch thread: the
request goes to the object's presigned URL (signed by the same s3fs client, so with its
credentials, endpoint and addressing style; SigV4, see :func:`_sigv4`), and the body is read
into a few reused buffers (one ``recv`` at a time; the GIL is free while it waits), written
with ``os.write`` and hashed from the same buffers by the feeder thread (s3_get.py). Cold
per-sample epochs on moto: 37k -> 49k samples/s (medians of four alternating runs).

Only downloads that need nothing else from botocore's HTTP stack go this way
(:func:`presigned_url`): no proxy (configured or from the environment), no extra request
parameters (requester pays, SSE-C keys), and not turned off with ``DLOAD_DIRECT_GET=0``. TLS
verifies with the system's CAs, or as the client's ``verify`` and ``AWS_CA_BUNDLE`` say.
Anything else goes through s3fs, and so does every failure before the body (a refused
connection, a TLS error, any status but 200): s3fs then makes the request from the first byte
and reports its errors as before (after a refusal such as a 403, for every later download of
that filesystem too). A body torn mid-way is resumed by s3fs from the first missing byte.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import queue
import socket
import ssl
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["BUFFERS", "BUFFER_SIZE", "Got", "direct_get", "direct_wanted", "exiting",
           "presigned_url", "refused"]

#: Reused receive buffers per download: a download in flight holds BUFFERS x BUFFER_SIZE.
BUFFER_SIZE = 2 * 2**20
BUFFERS = 4
#: Seconds a presigned URL stays valid: it is used at once, by one GET.
_EXPIRES = 3600
#: What a failed connection raises (ssl.SSLError and timeouts are OSErrors; ValueError: a URL
#: http.client refuses).
_NETWORK = (OSError, ValueError, http.client.HTTPException)


# Downloads in flight, cut when the interpreter exits: a stalled one held the exit of a
# script whose read a Ctrl-C had stopped for up to the read timeout (60 s), since the fetch
# pools' threads are joined at exit (QA nb58).
_LIVE: set[http.client.HTTPConnection] = set()
_LIVE_LOCK = threading.Lock()
_EXITING = threading.Event()
_HOOKED: list[bool] = []


def exiting() -> bool:
    """Whether the interpreter is exiting (downloads in flight were cut: none resumes)."""
    return _EXITING.is_set()


def _cut_all() -> None:
    _EXITING.set()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for conn in live:
        with contextlib.suppress(OSError, AttributeError):
            conn.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]


def _hook() -> None:
    """Cut at exit, before the pools' threads are joined: registered on first use, after
    concurrent.futures registered its join (these run last registered, first)."""
    with _LIVE_LOCK:
        if _HOOKED:
            return
        _HOOKED.append(True)
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        with contextlib.suppress(RuntimeError):  # already shutting down
            register(_cut_all)


def direct_wanted() -> bool:
    """``DLOAD_DIRECT_GET``: ``0`` / ``off`` sends every download through s3fs."""
    value = os.environ.get("DLOAD_DIRECT_GET", "").strip().lower()
    if value in ("", "1", "on", "true", "yes"):
        return True
    if value in ("0", "off", "false", "no"):
        return False
    from dload_arrow.errors import ConfigError

    raise ConfigError(f"DLOAD_DIRECT_GET={value!r}: use 1 (shard GETs over http.client, the "
                      "default) or 0 (every GET through s3fs)")


def presigned_url(fs: Any, bucket: str, key: str, version: str | None) -> str | None:
    """A presigned GET URL of the object, or None when the download should go through s3fs."""
    if not direct_wanted() or getattr(fs, "_dload_no_direct", False):
        return None
    if getattr(fs, "req_kw", None) or getattr(fs, "s3_additional_kwargs", None):
        return None  # requester pays, SSE-C keys and the like are headers s3fs adds
    if (getattr(fs, "config_kwargs", None) or {}).get("proxies"):
        return None
    from fsspec.asyn import sync

    params = {"Bucket": bucket, "Key": key}
    if version:
        params["VersionId"] = version

    async def sign() -> str:
        client = await fs.get_s3(bucket)
        url: str = await client.generate_presigned_url(
            "get_object", Params=params, ExpiresIn=_EXPIRES)
        if "Signature=" not in url or "X-Amz-Signature=" in url:
            return url  # unsigned (anonymous), or SigV4 already
        return await _sigv4(client, url)

    try:
        url = sync(fs.loop, sign)
    except Exception:  # a client that cannot presign: s3fs's own GET reports what is wrong
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if _proxied(parts):
        return None
    return url


async def _sigv4(client: Any, url: str) -> str:
    """``url`` (presigned with SigV2, as botocore still does unless told otherwise) signed with
    SigV4 instead: AWS refuses SigV2 for buckets made since 2020 and in newer regions."""
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest

    creds = await client._request_signer._credentials.get_frozen_credentials()
    parts = urllib.parse.urlsplit(url)
    v2 = {"AWSAccessKeyId", "Signature", "Expires", "x-amz-security-token"}
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
             if k not in v2]
    request = AWSRequest(method="GET", url=urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, parts.path, urllib.parse.urlencode(query), "")))
    region = client.meta.region_name or "us-east-1"
    S3SigV4QueryAuth(creds, "s3", region, expires=_EXPIRES).add_auth(request)
    signed: str = request.prepare().url
    return signed


def _proxied(parts: urllib.parse.SplitResult) -> bool:
    """Whether the environment routes this URL through a proxy (aiohttp would honour it)."""
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.netloc)


def _tls(fs: Any) -> ssl.SSLContext:
    verify = (getattr(fs, "client_kwargs", None) or {}).get("verify")
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    cafile = verify if isinstance(verify, str) else os.environ.get("AWS_CA_BUNDLE") or None
    return ssl.create_default_context(cafile=cafile)


class Got(NamedTuple):
    """What :func:`direct_get` did."""

    written: int  #: bytes written to the file
    done: bool  #: the whole body was written
    status: int = 0  #: the response's HTTP status (0: no response)


#: Statuses that say the endpoint takes no presigned GETs (or not this way): after one, every
#: download of that filesystem goes through s3fs (a 404 or a 5xx says nothing of the kind).
_REFUSALS = frozenset({400, 401, 403, 405, 501})


def refused(fs: Any, got: Got) -> None:
    """Stop presigning for ``fs`` when ``got`` was refused by the endpoint (see _REFUSALS)."""
    if got.status in _REFUSALS:
        fs._dload_no_direct = True


def direct_get(fs: Any, url: str, fd: int,
               hand_over: Callable[[memoryview, queue.Queue[bytearray]], None] | None,
               ) -> Got:
    """GET ``url`` into file descriptor ``fd``.

    Each piece read is written, then passed to ``hand_over`` with the queue its buffer goes
    back to once hashed. Not done: nothing was received (written 0: a status other than 200,
    a refused connection, a TLS error) or the body broke off after ``written`` bytes.
    """
    config = getattr(fs, "config_kwargs", None) or {}
    timeout = float(config.get("read_timeout") or 60)
    parts = urllib.parse.urlsplit(url)
    try:
        conn = (http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout,
                                            context=_tls(fs))
                if parts.scheme == "https" else
                http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout))
    except OSError:  # a CA bundle that cannot be read: s3fs reports it
        return Got(0, False)
    free: queue.Queue[bytearray] = queue.Queue()
    for _ in range(BUFFERS):
        free.put(bytearray(BUFFER_SIZE))
    written = filled = 0
    view = memoryview(free.get())
    _hook()
    with _LIVE_LOCK:
        _LIVE.add(conn)
    try:
        try:
            conn.request("GET", f"{parts.path}?{parts.query}")
            resp = conn.getresponse()
        except _NETWORK:
            return Got(0, False)
        remaining = resp.length
        if resp.status != 200 or remaining is None:  # S3 always sends the length
            return Got(0, False, resp.status)
        while remaining:
            # What the socket has now (one recv): the file grows as the bytes arrive, so that
            # a reader of the partial file (read/progressive.py) sees them.
            try:
                n = resp.fp.readinto1(view[filled:min(BUFFER_SIZE, filled + remaining)])
            except _NETWORK:
                return Got(written, False, 200)
            if not n:
                return Got(written, False, 200)  # the body ended short
            write_all(fd, view[filled:filled + n])  # a local error (disk full) is raised
            filled += n
            written += n
            remaining -= n
            if filled == BUFFER_SIZE and remaining:
                _hand(view[:filled], free, hand_over)
                view, filled = memoryview(free.get()), 0
        return Got(written, True, 200)
    finally:
        if filled:  # the digest sees every byte written, in order
            _hand(view[:filled], free, hand_over)
        with _LIVE_LOCK:
            _LIVE.discard(conn)
        conn.close()


def _hand(piece: memoryview, free: queue.Queue[bytearray],
          hand_over: Callable[[memoryview, queue.Queue[bytearray]], None] | None) -> None:
    if hand_over is None:
        free.put(piece.obj)  # type: ignore[arg-type]
    else:
        hand_over(piece, free)


def write_all(fd: int, data: memoryview | bytes) -> None:
    """Write all of ``data`` at ``fd``'s offset (``os.write`` may write less)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
