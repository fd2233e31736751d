"""deploy/compose.yaml, checked as Compose would read it: variables interpolated, then parsed by
compose-spec (the compose_spec Rust parser: unknown keys, bad durations and malformed ports
are errors), then what the deployment relies on: profiles, the model-pulling init step, the
data volume, and a stop grace period the drain fits in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from compose_spec import PyCompose, parse_duration

ROOT = Path(__file__).parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
PROXY = ROOT / "deploy" / "compose.proxy.yaml"
CONTAINERFILE = ROOT / "deploy" / "Containerfile"
# the last grace uvicorn gives open streams after the drain (entrypoints/server.py)
STREAM_GRACE = 5
VARIABLE = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\})")


class Missing(Exception):
    pass


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation: ${VAR}, ${VAR:-default}/${VAR-default}, ${VAR:?error}/${VAR?error}, $$."""

    def one(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if name is None:
            return "$"
        value = env.get(name)
        unset = value is None or (op is not None and op.startswith(":") and value == "")
        if op in (":-", "-") and unset:
            return arg
        if op in (":?", "?") and unset:
            raise Missing(f"{name}: {arg}")
        return value or ""

    return VARIABLE.sub(one, text)


def load(env: dict[str, str], text: str | None = None) -> dict[str, Any]:
    compose = PyCompose.from_yaml(interpolate(COMPOSE.read_text() if text is None else text, env))
    compose.validate()
    model: dict[str, Any] = compose.to_dict()
    return model


ENV = {"API_TOKEN": "t0ken"}


def test_the_file_is_valid_compose() -> None:
    model = load(ENV)
    assert set(model["services"]) == {"sophos", "ollama", "ollama-pull", "postgres"}
    # what validate() leaves out: references between services and to named volumes
    volumes = set(model.get("volumes") or {})
    for name, service in model["services"].items():
        for target in service.get("depends_on") or {}:
            assert target in model["services"], f"{name} depends on unknown {target}"
        for mount in service.get("volumes") or []:
            source = mount.split(":")[0] if isinstance(mount, str) else mount.get("source")
            assert source in volumes, f"{name} mounts undeclared volume {source}"


def test_the_validator_refuses_what_compose_would() -> None:
    """The check can fail: a misspelt key and a duration that is not one are errors."""
    text = COMPOSE.read_text()
    with pytest.raises(ValueError, match="stop_grace_perod"):
        load(ENV, text.replace("stop_grace_period:", "stop_grace_perod:"))
    with pytest.raises(ValueError, match="duration"):
        load(ENV, text.replace("stop_grace_period: 45s", "stop_grace_period: soon"))


def test_api_token_is_required_since_the_image_listens_beyond_loopback() -> None:
    with pytest.raises(Missing, match="API_TOKEN"):
        load({})
    sophos = load(ENV)["services"]["sophos"]
    assert sophos["environment"]["API_TOKEN"] == "t0ken"
    assert "HOST" not in sophos["environment"]  # the image's 0.0.0.0, which the token makes legal
    assert "HOST=0.0.0.0" in CONTAINERFILE.read_text()


def test_profiles_ollama_with_an_init_step_that_pulls_the_model_and_postgres() -> None:
    services = load({**ENV, "OLLAMA_MODEL": "llama3.2:1b"})["services"]
    assert "profiles" not in services["sophos"]  # Sophos itself always runs
    assert services["ollama"]["profiles"] == ["ollama"]
    assert services["postgres"]["profiles"] == ["postgres"]
    pull = services["ollama-pull"]
    assert pull["profiles"] == ["ollama"]
    assert pull["entrypoint"] == ["ollama", "pull", "llama3.2:1b"]  # the model Sophos is told to use
    assert pull["environment"]["OLLAMA_HOST"] == "http://ollama:11434"
    assert pull["depends_on"]["ollama"]["condition"] == "service_healthy"
    assert services["sophos"]["environment"]["OLLAMA_MODEL"] == "llama3.2:1b"
    waits = services["sophos"]["depends_on"]
    assert waits["ollama-pull"] == {"condition": "service_completed_successfully", "required": False}
    assert waits["postgres"] == {"condition": "service_healthy", "required": False}


def test_the_gpu_block_is_valid_once_uncommented() -> None:
    text = COMPOSE.read_text()
    block = re.search(r"(    # deploy:\n(?:    #   .*\n)+)", text)
    assert block, "the GPU comment is missing"
    enabled = text.replace(block.group(1), re.sub(r"^    # ", "    ", block.group(1), flags=re.M))
    devices = load(ENV, enabled)["services"]["ollama"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and devices[0]["capabilities"] == ["gpu"]


def test_stop_grace_period_outlasts_the_drain() -> None:
    sophos = load(ENV)["services"]["sophos"]
    shutdown = float(sophos["environment"]["SHUTDOWN_TIMEOUT"])
    grace = parse_duration(sophos["stop_grace_period"])
    assert grace > shutdown + STREAM_GRACE, (grace, shutdown)
    assert sophos["environment"]["AUTO_RESUME"] == "true"  # a run a restart cut short goes on


def test_the_data_volume_is_the_images_volume() -> None:
    sophos = load(ENV)["services"]["sophos"]
    assert "sophos-data:/data" in sophos["volumes"]
    assert 'VOLUME ["/data"]' in CONTAINERFILE.read_text()
    assert sophos["build"] == {"context": "..", "dockerfile": "deploy/Containerfile"}


def test_the_ports_are_published_on_the_hosts_loopback_unless_told_otherwise() -> None:
    assert load(ENV)["services"]["sophos"]["ports"] == ["127.0.0.1:8000:8000", "127.0.0.1:2024:2024"]
    wide = load({**ENV, "SOPHOS_BIND": "0.0.0.0", "SOPHOS_PORT": "8080"})["services"]["sophos"]
    assert wide["ports"] == ["0.0.0.0:8080:8000", "0.0.0.0:2024:2024"]
    for name, service in load(ENV)["services"].items():
        if name != "sophos":
            assert "ports" not in service, name  # the model server and the database stay inside


VERSION = re.compile(r":\d+\.\d+(\.\d+)?(@sha256:[0-9a-f]{64})?$")


def test_every_image_pulled_is_pinned_to_a_release() -> None:
    for name, service in load(ENV)["services"].items():
        image = service["image"]
        if image.startswith("localhost/"):
            continue  # built here
        assert VERSION.search(image), f"{name} pulls {image}: a moving tag"


class _Reset:
    """Compose's `!reset`: the key goes, whatever the file before said."""


def _loader() -> type[yaml.SafeLoader]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!reset", lambda loader, node: _Reset())
    return Loader


def _merge(base: Any, override: Any) -> Any:
    """Compose's merge of two files, for what they use: mappings merged key by key, a
    sequence of the override appended, `!reset` removing the key."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            if isinstance(value, _Reset):
                merged.pop(key, None)
            else:
                merged[key] = _merge(base[key], value) if key in base else value
        return merged
    if isinstance(base, list) and isinstance(override, list):
        return base + override
    return override


def load_with_proxy(env: dict[str, str]) -> dict[str, Any]:
    base = yaml.load(interpolate(COMPOSE.read_text(), env), Loader=_loader())  # noqa: S506 (a SafeLoader)
    proxy = yaml.load(interpolate(PROXY.read_text(), env), Loader=_loader())  # noqa: S506
    PyCompose.from_yaml(interpolate(PROXY.read_text(), env)).validate()  # the override alone is valid too
    return load(env, yaml.safe_dump(_merge(base, proxy)))


def test_with_proxy_sign_on_no_port_of_sophos_is_published() -> None:
    """The user header is believed from the proxy: a published port would let anyone send it."""
    with pytest.raises(Missing, match="TRUSTED_PROXY_IPS"):
        load_with_proxy(ENV)
    sophos = load_with_proxy({**ENV, "TRUSTED_PROXY_IPS": "172.30.0.0/24"})["services"]["sophos"]
    assert "ports" not in sophos
    assert sophos["environment"]["AUTH"] == "proxy"
    assert sophos["environment"]["TRUSTED_PROXY_IPS"] == "172.30.0.0/24"
    assert sophos["environment"]["PROXY_USER_HEADER"] == "Remote-User"
    assert sophos["environment"]["API_TOKEN"] == "t0ken"  # the rest of compose.yaml is kept
