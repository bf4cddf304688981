"""What an S3 store answered when a conditional write (If-None-Match, If-Match) did not happen.

Only a lost race may read as "not written" (``put_if_absent`` and ``compare_and_swap`` return
False and the caller acts on someone else's object): a ``412 PreconditionFailed`` (the object
exists, or changed since it was read) or a ``409 ConditionalRequestConflict`` (another
conditional write to the key was in flight). s3fs cannot tell them apart from a bad request:
it maps PreconditionFailed to EINVAL, as it does IncompleteBody, BadDigest, InvalidArgument,
InvalidRequest, MissingContentLength and more, and every 409 and throttling answer to EBUSY.
Taking those for a lost race made a commit skip a shard that was never stored, then blame a
concurrent gc for deleting it. So the answer is read from botocore's ClientError, which s3fs
keeps as the exception's ``__cause__``: its error code and HTTP status.
"""

from __future__ import annotations

from typing import Any

from dload_arrow.errors import StorageError

__all__ = ["lost_race", "refused_credentials", "refused_write"]

#: The codes of a conditional write that lost to another writer.
_LOST = ("PreconditionFailed", "ConditionalRequestConflict")


def _answer(error: BaseException) -> tuple[str, int | None, str] | None:
    """The (code, HTTP status, message) of the store's answer in ``error``'s chain, if any."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        response: Any = getattr(e, "response", None)
        if isinstance(response, dict) and isinstance(response.get("Error"), dict):
            err = response["Error"]
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return (str(err.get("Code") or ""), status if isinstance(status, int) else None,
                    str(err.get("Message") or ""))
        e = e.__cause__ or e.__context__
    return None


def refused_credentials(error: BaseException) -> bool:
    """Whether ``error`` is the store refusing the credentials (403, AccessDenied, a key it
    does not know, a bad signature), by the store's answer, not the message's words."""
    found = _answer(error)
    if found is None:
        return isinstance(error, PermissionError)
    code, status, _ = found
    return status == 403 or code in ("AccessDenied", "InvalidAccessKeyId",
                                     "SignatureDoesNotMatch")


def lost_race(error: BaseException) -> bool:
    """Whether ``error`` (raised by a conditional PUT) says another writer won: a 412, or a
    409 ConditionalRequestConflict. Anything else is a failure to report."""
    found = _answer(error)
    if found is None:  # no ClientError kept: only the code itself in the text counts
        return any(code in str(error) for code in _LOST)
    code, status, _ = found
    return code in _LOST or status == 412


def refused_write(error: BaseException, what: str, key: str) -> StorageError | None:
    """The error for a conditional write of object ``key`` (``s3://bucket/key``, redacted)
    that the store refused for another reason than a lost race: its code, status and
    message, and what to do. None when ``error`` holds no answer of the store (a network
    error: the caller's usual wrapping applies)."""
    found = _answer(error)
    if found is None:
        return None
    code, status, message = found
    if code in ("IncompleteBody", "BadDigest", "InvalidDigest", "MissingContentLength"):
        fix = ("The upload arrived incomplete or garbled (a network or proxy problem) and "
               "nothing was stored under that key: run the command again")
    elif code in ("NotImplemented", "InvalidArgument", "InvalidRequest") or status == 501:
        fix = ("The store may not support conditional writes (If-None-Match / If-Match), "
               "which dload needs on S3: check the endpoint (DLOAD_ENDPOINT_URL) and the "
               "store's version")
    elif status == 403:
        fix = "Check the credentials and their permission to write to the bucket"
    elif (status or 0) >= 500 or status == 429 or code == "SlowDown":
        fix = "The store is busy or failing and nothing was stored: try again later"
    else:
        fix = "Nothing was stored under that key"
    said = " ".join(dict.fromkeys(p for p in (str(status or ""), code) if p)) or "an error"
    return StorageError(f"{what} {key} failed: the store answered {said}"
                        f"{': ' + message.rstrip('.') if message else ''}. {fix}")
