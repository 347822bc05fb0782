"""A stand-in for the two Kubernetes API calls `memrank promote` makes, over HTTPS on loopback.

No kube-apiserver runs in these tests' environment, so this serves ConfigMap
objects in the shape the Kubernetes API reference gives (``apiVersion: v1``,
``kind: ConfigMap``, ``metadata.{name, namespace, resourceVersion}``,
``data``) at ``/api/v1/namespaces/{namespace}/configmaps/{name}``:

- ``GET``: the object (200), or a ``Status`` with 404;
- ``PATCH`` with ``Content-Type: application/merge-patch+json``: 415 for any
  other type; 409 ``Conflict`` when the patch carries a
  ``metadata.resourceVersion`` that is not the stored one (the API server's
  precondition); else the patch is applied by the real ``kubectl patch
  --local --type merge`` (Kubernetes' own JSON merge patch code, when kubectl
  is installed; RFC 7386 by hand otherwise) and the resourceVersion bumped;
- 401 unless ``Authorization: Bearer <token>``.

Every request is recorded (method, path, headers, body) for the tests to check.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.certs import Certificates


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def apply(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """The patched object, by kubectl's merge patch when kubectl is installed."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return dict(merge_patch(obj, patch))
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(obj, f)
        f.flush()
        out = subprocess.run([kubectl, "patch", "--local", "-f", f.name, "--type", "merge", "-p", json.dumps(patch),
                              "-o", "json"], capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(out.stdout))


@dataclass
class ConfigMapApi:
    """The stored objects, the accepted token, and what was asked."""

    token: str
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    after_get: Callable[[ConfigMapApi], None] | None = None  # another writer, acting between a read and a write

    def put(self, namespace: str, name: str, data: dict[str, str], version: int = 100) -> None:
        """Create (or replace) a ConfigMap."""
        self.objects[(namespace, name)] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "namespace": namespace, "resourceVersion": str(version), "uid": f"uid-{name}"},
            "data": data}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason,
            "code": code}


def _handler(api: ConfigMapApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def _answer(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self) -> tuple[str, str] | None:
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "configmaps":
                return parts[3], parts[5]
            return None

        def _handle(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with api.lock:
                api.requests.append({"method": method, "path": self.path, "headers": dict(self.headers),
                                     "body": json.loads(body) if body else None})
                if self.headers.get("Authorization") != f"Bearer {api.token}":
                    return self._answer(401, _status(401, "Unauthorized", "Unauthorized"))
                key = self._route()
                if key is None or key not in api.objects:
                    return self._answer(404, _status(404, "NotFound", f'configmaps "{key}" not found'))
                obj = api.objects[key]
                if method == "GET":
                    self._answer(200, obj)
                    if api.after_get is not None:
                        hook, api.after_get = api.after_get, None
                        hook(api)
                    return None
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self._answer(415, _status(415, "UnsupportedMediaType", "unsupported patch type"))
                patch = json.loads(body)
                wanted = (patch.get("metadata") or {}).get("resourceVersion")
                if wanted is not None and wanted != obj["metadata"]["resourceVersion"]:
                    return self._answer(409, _status(409, "Conflict", "Operation cannot be fulfilled on "
                                                     "configmaps: the object has been modified"))
                new = apply(obj, patch)
                new["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
                api.objects[key] = new
                return self._answer(200, new)

        def do_GET(self) -> None:
            """GET."""
            self._handle("GET")

        def do_PATCH(self) -> None:
            """PATCH."""
            self._handle("PATCH")

    return Handler


@contextmanager
def serving(certs: Certificates, token: str) -> Iterator[ConfigMapApi]:
    """The stand-in on 127.0.0.1 (a free port), TLS with the test CA's server certificate."""
    api = ConfigMapApi(token)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(certs.server_cert), str(certs.server_key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    api.url = f"https://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()


def write_token(folder: Path, token: str) -> Path:
    """A token file as the kubelet mounts it."""
    path = folder / "token"
    path.write_text(token + "\n")
    return path
