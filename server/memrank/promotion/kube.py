"""One ConfigMap's data key, read and replaced through the Kubernetes API with the pod's service account.

``GET /api/v1/namespaces/{namespace}/configmaps/{name}`` returns the object
(``metadata.resourceVersion``, ``data``); the write is a JSON merge patch
(RFC 7386, ``Content-Type: application/merge-patch+json``) of
``{"metadata": {"resourceVersion": <as read>}, "data": {<key>: <text>}}`` to
the same path: only that key changes, and the resourceVersion makes it
conditional, so a ConfigMap changed between the read and the write answers
409 Conflict instead of losing the other change (the caller reads again). The
bearer token and the CA bundle are the files Kubernetes mounts into every pod
whose service account token is mounted; the token is read on every call (a
projected token rotates). Standard library only.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from memrank.promotion.merge import PromotionError

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
IN_CLUSTER = "https://kubernetes.default.svc"
TIMEOUT_SECONDS = 30.0


class Conflict(PromotionError):
    """The ConfigMap changed since it was read (409): read it again and retry."""


@dataclass(frozen=True)
class ConfigMapRef:
    """namespace/name of a ConfigMap, and the data key that holds the config file."""

    namespace: str
    name: str
    key: str

    @staticmethod
    def parse(text: str, key: str) -> ConfigMapRef:
        """``NAMESPACE/NAME``; PromotionError naming the flag otherwise."""
        namespace, _, name = text.partition("/")
        if not namespace or not name or "/" in name:
            raise PromotionError(f"--configmap {text!r}: expected NAMESPACE/NAME, e.g. memrank/memrank")
        return ConfigMapRef(namespace, name, key)

    def __str__(self) -> str:
        return f"configmap {self.namespace}/{self.name} key {self.key}"


@dataclass(frozen=True)
class Api:
    """Where the API server is and how to prove who we are to it."""

    server: str = IN_CLUSTER
    token_file: Path = SERVICE_ACCOUNT / "token"
    ca_file: Path = SERVICE_ACCOUNT / "ca.crt"

    def _call(self, method: str, url: str, body: dict[str, Any] | None, what: str) -> dict[str, Any]:
        try:
            token = self.token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise PromotionError(f"--token-file {self.token_file}: {exc.strerror or exc} (is the service "
                                 f"account token mounted? automountServiceAccountToken)") from None
        try:
            context = ssl.create_default_context(cafile=str(self.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise PromotionError(f"--ca-file {self.ca_file}: {exc}") from None
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/merge-patch+json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=context, timeout=TIMEOUT_SECONDS) as response:
                return dict(json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            raise _http_error(exc, method, what) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PromotionError(f"{method} {url}: {reason}") from None

    def _url(self, ref: ConfigMapRef) -> str:
        return (f"{self.server.rstrip('/')}/api/v1/namespaces/{quote(ref.namespace, safe='')}/configmaps/"
                f"{quote(ref.name, safe='')}")

    def read(self, ref: ConfigMapRef) -> tuple[str, str]:
        """(the data key's text, "" when absent; the resourceVersion read)."""
        obj = self._call("GET", self._url(ref), None, str(ref))
        data = obj.get("data") or {}
        return str(data.get(ref.key, "")), str((obj.get("metadata") or {}).get("resourceVersion", ""))

    def write(self, ref: ConfigMapRef, text: str, resource_version: str) -> str:
        """Replace the data key if the ConfigMap is still at ``resource_version``; the new resourceVersion."""
        patch: dict[str, Any] = {"data": {ref.key: text}}
        if resource_version:
            patch["metadata"] = {"resourceVersion": resource_version}
        obj = self._call("PATCH", self._url(ref), patch, str(ref))
        return str((obj.get("metadata") or {}).get("resourceVersion", ""))


def _http_error(exc: urllib.error.HTTPError, method: str, what: str) -> PromotionError:
    try:
        message = str(json.loads(exc.read()).get("message", ""))  # a metav1.Status
    except (ValueError, OSError, AttributeError):
        message = ""
    detail = f"{method} {what}: HTTP {exc.code}" + (f": {message}" if message else "")
    if exc.code == 409:
        return Conflict(detail)
    if exc.code in (401, 403):
        return PromotionError(f"{detail} (the job's ServiceAccount needs get and patch on this one ConfigMap: "
                              f"the chart's promotion Role)")
    if exc.code == 404:
        return PromotionError(f"{detail} (no such ConfigMap: check --configmap)")
    return PromotionError(detail)
