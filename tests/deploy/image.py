"""Build the image of deploy/Containerfile here, where no image registry is reachable: the base
is a Debian trixie root file system made by debootstrap from Debian's mirror and imported into
podman, cached outside the work tree (SOPHOS_DEPLOY_CACHE, default ~/.cache/sophos-deploy)
so that only the first run pays for it (~6 min; the image build on top of it ~2-4 min, its
layers cached by podman).

podman runs containers here with runc (crun fails on this machine's hybrid cgroups) and
without default ulimits (setting them is not permitted in this sandbox): a containers.conf of
our own says both (CONTAINERS_CONF), so nothing on the machine is reconfigured.

    python -m tests.deploy.image      builds (or reuses) the base and the image, prints the tag
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
CACHE = Path(os.environ.get("SOPHOS_DEPLOY_CACHE") or Path.home() / ".cache" / "sophos-deploy")
SUITE = "trixie"
MIRROR = os.environ.get("SOPHOS_DEPLOY_MIRROR", "http://deb.debian.org/debian")
# what the Containerfile's stages install anyway: in the base, so that a rebuild needs no apt
BASE_PACKAGES = "python3,python3-venv,nodejs,ca-certificates"
# bump when BASE_PACKAGES or SUITE change: a new tag makes a new base
BASE = f"localhost/sophos-base:{SUITE}-1"
IMAGE = "localhost/sophos:test"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
RUNTIME = ("--runtime", "runc")


CONTAINERS_CONF = """[containers]
# setrlimit is not permitted in this sandbox
default_ulimits = []

[engine]
# for the build's RUN steps too: crun, when installed, is podman's default and fails here
runtime = "runc"
"""


def containers_conf() -> Path:
    conf = CACHE / "containers.conf"
    if not conf.exists() or conf.read_text() != CONTAINERS_CONF:
        CACHE.mkdir(parents=True, exist_ok=True)
        conf.write_text(CONTAINERS_CONF)
    return conf


def podman(*args: str, check: bool = True, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(containers_conf())}
    cmd = ["podman", *args]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kw)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def image_exists(tag: str) -> bool:
    return podman("image", "exists", tag, check=False).returncode == 0


def ensure_base() -> str:
    if image_exists(BASE):
        return BASE
    rootfs = CACHE / f"rootfs-{SUITE}"
    if not (rootfs / "usr" / "bin" / "node").exists():
        partial = CACHE / f"rootfs-{SUITE}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        log = CACHE / "debootstrap.log"
        with log.open("w") as out:
            done = subprocess.run(
                ["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", SUITE, str(partial), MIRROR],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=1800,
            )
        if done.returncode != 0:
            raise RuntimeError(f"debootstrap exited {done.returncode}; see {log}:\n{log.read_text()[-2000:]}")
        for deb in (partial / "var" / "cache" / "apt" / "archives").glob("*.deb"):
            deb.unlink()
        shutil.rmtree(rootfs, ignore_errors=True)
        partial.rename(rootfs)
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    podman("import", "-", BASE, stdin=tar.stdout, timeout=600)
    tar.wait()
    return BASE


def build() -> str:
    """The image, built as the Containerfile's header says, on the debootstrapped base."""
    base = ensure_base()
    args = [
        "build",
        "--format",
        "docker",
        "-f",
        "deploy/Containerfile",
        "--ignorefile",
        "deploy/Containerfile.dockerignore",
        "--build-arg",
        f"BASE={base}",
        "-t",
        IMAGE,
    ]
    if HOST_CA.exists():  # this machine reaches PyPI and npm through a proxy that re-signs TLS
        args += ["--secret", f"id=ca_bundle,src={HOST_CA}"]
    log = CACHE / "build.log"
    result = podman(*args, ".", cwd=ROOT, timeout=1800, check=False)
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"podman build exited {result.returncode}; see {log}:\n{result.stderr[-3000:]}")
    return IMAGE


if __name__ == "__main__":
    print(build())
    sys.exit(0)
