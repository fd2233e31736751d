"""deploy/helm/sophos rendered by Helm (tests/deploy/helm.py): N replicas on PostgreSQL, a grace
period above the drain, readiness on readyz with the token, liveness on healthz, API_TOKEN and
DATABASE_URL from a Secret, the image's own user; and values that would lose runs refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.helm import render, validate

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(900)]

ROOT = Path(__file__).parents[2]
CHART = ROOT / "deploy" / "helm" / "sophos"
STREAM_GRACE = 5  # uvicorn's last grace for open streams after the drain (entrypoints/server.py)
REQUIRED = {"apiToken": "t0ken", "databaseUrl": "postgresql://sophos:pw@db:5432/sophos"}


def objects(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in render(CHART, {**REQUIRED, **values})}


def test_every_object_is_valid_kubernetes() -> None:
    docs = render(
        CHART,
        {
            **REQUIRED,
            "existingSecret": "",
            "dataClaim": "sophos-memory",
            "nodeSelector": {"gpu": "no"},
            "extraEnv": {"LOG_LEVEL": "DEBUG"},
        },
    )
    assert {d["kind"] for d in docs} == {"Deployment", "Service", "Secret"}
    for doc in docs:
        validate(doc)


def test_the_schema_check_can_fail() -> None:
    deployment = objects({})["Deployment"]
    container(deployment)["readinesProbe"] = container(deployment).pop("readinessProbe")
    with pytest.raises(Exception, match="readinesProbe"):
        validate(deployment)


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    spec: dict[str, Any] = containers[0]
    return spec


def env_of(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


def test_n_replicas_share_postgresql_with_secrets_from_a_secret() -> None:
    rendered = objects({"replicaCount": 3})
    assert set(rendered) == {"Deployment", "Service", "Secret"}
    deployment, secret = rendered["Deployment"], rendered["Secret"]
    assert deployment["spec"]["replicas"] == 3
    assert secret["stringData"] == {"API_TOKEN": "t0ken", "DATABASE_URL": REQUIRED["databaseUrl"]}
    env = env_of(container(deployment))
    for key in ("API_TOKEN", "DATABASE_URL"):
        assert env[key] == {"secretKeyRef": {"name": secret["metadata"]["name"], "key": key}}
    assert env["HOST"] == "0.0.0.0" and env["AUTO_RESUME"] == "true"
    assert "postgresql" not in str(deployment)  # the URL (and its password) only in the Secret


def test_the_grace_period_outlasts_the_drain_and_probes_use_readyz_and_healthz() -> None:
    deployment = objects({})["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    c = container(deployment)
    shutdown = int(env_of(c)["SHUTDOWN_TIMEOUT"])
    assert pod["terminationGracePeriodSeconds"] > shutdown + STREAM_GRACE
    readiness = c["readinessProbe"]["exec"]["command"]
    assert readiness == ["/opt/sophos/venv/bin/python", "/opt/sophos/app/deploy/healthcheck.py"]
    assert "/api/readyz" in (ROOT / "deploy" / "healthcheck.py").read_text()
    assert c["livenessProbe"]["httpGet"] == {"path": "/api/healthz", "port": "http"}
    assert {"name": "http", "containerPort": 8000} in c["ports"]
    assert {"name": "langgraph", "containerPort": 2024} in c["ports"]
    service = objects({})["Service"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_the_pod_runs_as_the_images_user_on_a_read_only_root() -> None:
    uid = re.search(r"useradd [^\n]*--uid (\d+)", (ROOT / "deploy" / "Containerfile").read_text())
    assert uid
    deployment = objects({})["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == int(uid.group(1))
    assert pod["securityContext"]["runAsNonRoot"] is True
    c = container(deployment)
    assert c["securityContext"]["readOnlyRootFilesystem"] is True  # tests/deploy/test_image.py runs it so
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/data", "/tmp"}


def test_the_pod_gets_no_service_account_token() -> None:
    """Sophos never calls the Kubernetes API: a token mounted in the pod would only serve
    whoever ran code in it."""
    assert objects({})["Deployment"]["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_an_existing_secret_is_used_instead_of_one_made_by_the_chart() -> None:
    docs = render(CHART, {"existingSecret": "team-sophos"})
    kinds = {d["kind"]: d for d in docs}
    assert "Secret" not in kinds
    env = env_of(container(kinds["Deployment"]))
    assert env["API_TOKEN"] == {"secretKeyRef": {"name": "team-sophos", "key": "API_TOKEN"}}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"terminationGracePeriodSeconds": 35}, "must exceed shutdownTimeout"),
        ({"shutdownTimeout": 60}, "must exceed shutdownTimeout"),
        ({"apiToken": ""}, "apiToken is required"),
        ({"databaseUrl": ""}, "databaseUrl"),
    ],
)
def test_values_that_would_lose_runs_are_refused(values: dict[str, Any], message: str) -> None:
    with pytest.raises(Exception, match=message):
        render(CHART, {**REQUIRED, **values})
