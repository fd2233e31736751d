"""Render deploy/helm/sophos with Helm itself: `helm install` (Helm 4's Go code, from the
helm-sdkpy wheel's shared library) against a fake Kubernetes API server on loopback that
answers discovery, has no objects, and accepts every create. Helm renders the chart exactly as
it would for a cluster (values, `fail`, helpers) and returns the manifest it applied.

No `helm` binary is packaged for Debian, and helm-sdkpy has no template-only call (its lint
turns `fail` into a log line), hence the fake server. helm-sdkpy declares Python >= 3.12 but
only uses cffi, so it is installed with --ignore-requires-python into the deploy cache.

The fake server accepts any object, so `validate` checks each one against Kubernetes' own
OpenAPI schemas (kubernetes-validate, strict: an unknown field is an error).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.image import CACHE

# test-only tools, kept out of the dev lock: helm-sdkpy's 120 MB library and the schemas of
# every Kubernetes version are needed by `make test-deploy` alone
PACKAGES = ("helm-sdkpy==0.1.32", "kubernetes-validate==1.37.0", "importlib-resources==7.1.0")
TARGET = CACHE / "python-1"  # bump with PACKAGES
KUBERNETES = "1.33.0"

VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _resources(kinds: list[tuple[str, str]], group_version: str) -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "groupVersion": group_version,
        "resources": [
            {"name": plural, "singularName": plural[:-1], "namespaced": True, "kind": kind, "verbs": VERBS}
            for plural, kind in kinds
        ],
    }


DISCOVERY: dict[str, Any] = {
    "/version": {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "platform": "linux/amd64"},
    "/api": {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    },
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
            }
        ],
    },
    "/api/v1": _resources([("secrets", "Secret"), ("services", "Service"), ("configmaps", "ConfigMap")], "v1"),
    "/apis/apps/v1": _resources([("deployments", "Deployment")], "apps/v1"),
}


class FakeKube:
    """An empty cluster: discovery, empty lists, 404 for every object, every write accepted."""

    def __init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path in DISCOVERY:
                    self._send(200, DISCOVERY[path])
                elif "?" in self.path and "labelSelector" in self.path:  # Helm's release history
                    self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})
                else:
                    self._send(
                        404,
                        {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "status": "Failure",
                            "reason": "NotFound",
                            "code": 404,
                            "message": f"{path} not found",
                        },
                    )

            def _write(self, code: int) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.writes.append(self.path)
                # Helm's release record comes as protobuf: echo any object back, as JSON
                body = (
                    json.loads(raw)
                    if "json" in (self.headers.get("Content-Type") or "")
                    else {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "release"}}
                )
                self._send(code, body)

            def do_POST(self) -> None:
                self._write(201)

            def do_PUT(self) -> None:
                self._write(200)

            def do_PATCH(self) -> None:
                self._write(200)

        self.writes: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeKube:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def kubeconfig(self, directory: Path) -> Path:
        port = self.server.server_address[1]
        path = directory / "kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "fake",
                    "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                    "users": [{"name": "fake", "user": {"token": "fake"}}],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": "default"}}],
                }
            )
        )
        return path


def ensure_packages() -> None:
    done = TARGET / ".installed"
    if not done.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-deps",
                "--ignore-requires-python",
                "--upgrade",
                "--target",
                str(TARGET),
                *PACKAGES,
            ],
            check=True,
            timeout=900,
        )
        done.touch()
    if str(TARGET) not in sys.path:
        sys.path.insert(0, str(TARGET))


def validate(doc: dict[str, Any]) -> None:
    """Raise when the object is not valid for Kubernetes KUBERNETES (unknown fields included)."""
    ensure_packages()
    import kubernetes_validate  # type: ignore[import-not-found]

    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def render(chart: Path, values: dict[str, Any], release: str = "sophos") -> list[dict[str, Any]]:
    """The objects `helm install` applies for these values (Helm's errors, `fail` included, raise)."""
    ensure_packages()
    import helm_sdkpy  # type: ignore[import-not-found]

    with FakeKube() as kube, tempfile.TemporaryDirectory() as tmp:
        config = helm_sdkpy.Configuration(namespace="default", kubeconfig=str(kube.kubeconfig(Path(tmp))))
        result = asyncio.run(helm_sdkpy.Install(config).run(release, str(chart), values=values, wait=False, timeout=30))
    return [doc for doc in yaml.safe_load_all(result["manifest"]) if doc]
