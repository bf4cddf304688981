"""A real S3 server on 127.0.0.1 for tests: moto's server, with every request recorded.

Tests (and the subprocesses they start) talk to it over HTTP exactly like they would talk to
AWS, R2 or MinIO. The request log lets tests count PUTs, GETs and ranged reads at the server.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server


@dataclass
class Request:
    method: str
    path: str
    query: str
    range: str | None
    status: int = 0
    sent: int = 0
    copy: bool = False  # a server-side copy (PUT with x-amz-copy-source): no bytes uploaded


@dataclass
class S3Server:
    """A running moto server and the requests it served."""

    endpoint: str
    requests: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: Any = None
    #: Whole-object GETs of paths containing this text trickle out (see :meth:`throttle`).
    slow: tuple[str, float] | None = None

    #: The next whole-object GET of a path containing this text breaks off after so many bytes.
    torn: tuple[str, int] | None = None

    #: Whole-object GETs of paths containing this text send nothing until the event is set.
    held: tuple[str, threading.Event] | None = None

    #: Whole-object GETs of shards whose path does not contain this text send nothing until
    #: the event is set (every shard held back but one).
    hold_others: tuple[str, threading.Event] | None = None

    #: The next presigned GET of a path containing this text is refused with a 403.
    refuse_signed: str | None = None

    #: Requests answered with an S3 error instead of moto's answer (see :meth:`fail`).
    failing: list[tuple[str, str, int, str, str]] = field(default_factory=list)

    def fail(self, method: str, contains: str, status: int, code: str,
             message: str = "injected by the test", times: int = 1) -> None:
        """Answer the next ``times`` requests ``method`` of paths containing ``contains`` with
        an S3 error document (``<Code>``, ``<Message>``) and HTTP ``status``, as a store
        would; moto never sees them."""
        with self._lock:
            self.failing += [(method, contains, status, code, message)] * times

    def tear(self, contains: str, after: int) -> None:
        """Break the connection of the next whole-object GET of a matching path after
        ``after`` bytes of its body (a transfer torn mid-way); later GETs are served whole."""
        self.torn = (contains, after)

    def throttle(self, contains: str, seconds: float) -> None:
        """Serve whole-object GETs of matching paths in 16 KiB pieces over about ``seconds``."""
        self.slow = (contains, seconds)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def count(self, method: str, contains: str = "", ranged: bool | None = None,
              copy: bool | None = None) -> int:
        with self._lock:
            return sum(
                1
                for r in self.requests
                if r.method == method
                and contains in r.path
                and (ranged is None or (r.range is not None) == ranged)
                and (copy is None or r.copy == copy)
            )

    def gets(self, contains: str) -> list[Request]:
        """The GET requests of paths containing ``contains``, in order."""
        with self._lock:
            return [r for r in self.requests if r.method == "GET" and contains in r.path]

    def bytes_sent(self, contains: str = "") -> int:
        with self._lock:
            return sum(r.sent for r in self.requests if r.method == "GET" and contains in r.path)

    def stop(self) -> None:
        self._server.shutdown()


def _trickle(body: Any, seconds: float) -> Any:
    data = b"".join(body)
    pieces = [data[i:i + 16384] for i in range(0, len(data), 16384)] or [b""]
    for piece in pieces:
        time.sleep(seconds / len(pieces))
        yield piece


def _held(body: Any, release: threading.Event) -> Any:
    release.wait(60)
    yield from body


def _torn(body: Any, after: int) -> Any:
    data = b"".join(body)
    yield data[:after]
    # Raising after the headers and some of the body makes werkzeug drop the connection: the
    # client sees a response shorter than its Content-Length.
    raise ConnectionAbortedError("test: transfer torn on purpose")


def _injected(server: S3Server, req: Request) -> tuple[str, bytes] | None:
    """The status line and error document of an injected failure for ``req``, if any."""
    from http import HTTPStatus

    with server._lock:
        for i, entry in enumerate(server.failing):
            if entry[0] == req.method and entry[1] in req.path:
                del server.failing[i]
                break
        else:
            return None
    _method, _contains, status, code, message = entry
    doc = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
           f"<Message>{message}</Message><Key>{req.path}</Key></Error>").encode()
    return f"{status} {HTTPStatus(status).phrase}", doc


def start_s3_server() -> S3Server:
    """Start moto's S3 server on a free loopback port, recording requests."""
    app = DomainDispatcherApplication(create_backend_app)
    holder: dict[str, S3Server] = {}

    def recording(environ: dict[str, Any], start_response: Any) -> Any:
        req = Request(
            environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""),
            environ.get("QUERY_STRING", ""), environ.get("HTTP_RANGE"),
            copy="HTTP_X_AMZ_COPY_SOURCE" in environ,
        )

        def sr(status: str, headers: list[tuple[str, str]], *a: Any) -> Any:
            req.status = int(status.split()[0])
            for k, v in headers:
                if k.lower() == "content-length":
                    req.sent = int(v)
            return start_response(status, headers, *a)

        server = holder["s"]
        with server._lock:
            server.requests.append(req)
        injected = _injected(server, req)
        if injected is not None:
            status, doc = injected
            sr(status, [("Content-Type", "application/xml"),
                        ("Content-Length", str(len(doc)))])
            return [doc]
        refuse = server.refuse_signed
        if refuse is not None and refuse in req.path and "Signature=" in req.query:
            server.refuse_signed = None
            sr("403 Forbidden", [("Content-Length", "0")])
            return [b""]
        body = app(environ, sr)
        torn = server.torn
        if torn is not None and req.method == "GET" and not req.range and torn[0] in req.path:
            server.torn = None
            return _torn(body, torn[1])
        held = server.held
        if held is not None and req.method == "GET" and not req.range and held[0] in req.path:
            return _held(body, held[1])
        others = server.hold_others
        if (others is not None and req.method == "GET" and not req.range
                and "/shards/" in req.path and others[0] not in req.path):
            return _held(body, others[1])
        slow = server.slow
        if slow is None or req.method != "GET" or req.range or slow[0] not in req.path:
            return body
        return _trickle(body, slow[1])

    httpd = make_server("127.0.0.1", 0, recording, True, request_handler=MotoRequestHandler)
    host, port = httpd.server_address[:2]
    server = S3Server(endpoint=f"http://{host}:{port}", _server=httpd)
    holder["s"] = server
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return server
