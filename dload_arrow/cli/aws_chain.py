"""What botocore would use for an S3 root when dload sets nothing: its endpoint and whether
it finds credentials, for ``dload status``.

dload passes only its own settings to s3fs; botocore fills the rest from its environment
variables, ``~/.aws/config`` (profiles and ``services`` sections), ``~/.aws/credentials``,
SSO, ``credential_process`` and instance roles. Status asks botocore itself, so what it shows
is what a read will use (a QA finding: credentials in ``~/.aws/config`` were reported as
"NONE found" beside a root that read fine).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dload_arrow.storage import redact_url

__all__ = ["botocore_credentials", "botocore_endpoint"]

# Where botocore's credentials came from (Credentials.method), in words a user can act on.
_METHODS = {"env": "environment", "shared-credentials-file": "{credentials}",
            "config-file": "{config}", "iam-role": "instance role",
            "container-role": "container role", "sso": "SSO ({config})",
            "custom-process": "credential_process ({config})",
            "assume-role": "assume-role ({config})",
            "assume-role-with-web-identity": "web identity token"}


def _files() -> dict[str, str]:
    home = Path.home()
    return {"config": os.environ.get("AWS_CONFIG_FILE") or str(home / ".aws/config"),
            "credentials": os.environ.get("AWS_SHARED_CREDENTIALS_FILE")
            or str(home / ".aws/credentials")}


def botocore_endpoint(s3_root: bool) -> dict[str, Any]:
    """The S3 endpoint botocore takes when dload sets none: its variables
    (AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL), then, for an S3 root, its config file
    (``endpoint_url`` of the profile or its ``services`` section); unless switched off."""
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() == "true":
        return {"value": None, "source": "default"}
    for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if os.environ.get(var):
            return {"value": redact_url(os.environ[var]),
                    "source": f"env {var} (read by botocore)"}
    if s3_root:
        try:
            import botocore.session

            url = botocore.session.Session().create_client("s3").meta.endpoint_url
        except Exception:  # a broken profile: the read's own error names it
            url = None
        if url and "amazonaws.com" not in url:
            return {"value": redact_url(url),
                    "source": f"{_files()['config']} (read by botocore)"}
    return {"value": None, "source": "default"}


def botocore_credentials(root: str) -> dict[str, Any]:
    """Whether botocore finds credentials for an S3 ``root``, and where (never the keys)."""
    if not root.startswith(("s3://", "s3a://")):
        return {"needed": False, "present": None, "from": None}
    try:
        import botocore.session

        creds = botocore.session.Session().get_credentials()
    except Exception as e:  # AWS_PROFILE naming no profile
        return {"needed": True, "present": False, "from": None, "error": str(e)}
    if creds is None:
        return {"needed": True, "present": False, "from": None}
    where = _METHODS.get(creds.method, creds.method).format(**_files())
    return {"needed": True, "present": True, "from": [where]}
