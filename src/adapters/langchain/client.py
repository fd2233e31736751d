"""The transport a model server's clients use, chosen once per model: the httptools one
(adapters.langchain.transport, the fast path) or httpx's own, under the same bounds.

httpx mounts the proxies named by HTTP_PROXY/HTTPS_PROXY/ALL_PROXY/NO_PROXY only when it
builds its own transports, and the model clients are handed one; the httptools transport
speaks to origins only. So MODEL_TRANSPORT chooses: `fast` (httptools, proxies ignored),
`httpx` (httpx's transport, with the proxy the environment names for the model server, if
any), or `auto` (the default): httpx's when a proxy applies to the model server's URL, else
the fast one. Whichever it is, the readiness probe goes through the same transport, and both
verify TLS with the same context: httpx's (certifi's CAs, or SSL_CERT_FILE/SSL_CERT_DIR).
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
import urllib.request
from urllib.parse import urlsplit

import httpx

from adapters.langchain.bounds import BoundedTransport
from adapters.langchain.transport import KEEP_IDLE, ModelTransport

log = logging.getLogger(__name__)

MODES = ("auto", "fast", "httpx")


def tls_context(base_url: str) -> ssl.SSLContext | None:
    """The context a model server's clients verify TLS with, None for plain http (Ollama's
    default): loading the CA bundle costs ~1.8 MB of RSS, and an http server never uses it."""
    return httpx.create_ssl_context() if base_url.lower().startswith("https:") else None


def proxy_for(base_url: str) -> str | None:
    """The proxy the environment names for this URL (the `<scheme>_proxy` or `all_proxy`
    variable, either case, unless NO_PROXY exempts the host), or None."""
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(base_url)
    proxy = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not proxy or parts.hostname is None:
        return None
    if exempt(parts.hostname, parts.port or (443 if parts.scheme.lower() == "https" else 80), proxies.get("no", "")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"  # as curl reads a bare host:port


def exempt(host: str, port: int, no_proxy: str) -> bool:
    """Whether NO_PROXY exempts the host: `*`, a name (and its subdomains, with or without a
    leading dot or `*.`), an IP address or network (CIDR), each with an optional `:port`."""
    host = host.lower().strip("[]")
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        name, wanted = _split_port(entry)
        if not name or (wanted is not None and wanted != port):
            continue
        if "/" in name or _is_ip(name):
            try:
                if ipaddress.ip_address(host) in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:
                pass
            continue
        name = name.removeprefix("*").lstrip(".")
        if host == name or host.endswith(f".{name}"):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8080
        name, _, rest = entry[1:].partition("]")
        return name, int(rest[1:]) if rest[1:].isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, int(port) if port.isdigit() else None
    return entry, None  # a name, an IPv4 address or a bare IPv6 address


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def model_transport(
    base_url: str, mode: str = "auto", tls: ssl.SSLContext | None = None, keep: int = KEEP_IDLE
) -> BoundedTransport:
    """The bounded transport for one model server's clients (module docstring)."""
    if mode not in MODES:
        raise ValueError(f"MODEL_TRANSPORT must be one of {', '.join(MODES)}, got {mode!r}")
    proxy = proxy_for(base_url)
    if mode == "fast" or (mode == "auto" and proxy is None):
        if proxy is not None:
            log.warning("MODEL_TRANSPORT=fast: the proxy set for %s (%s) is not used", base_url, _safe(proxy))
        return BoundedTransport(ModelTransport(tls, keep))
    if proxy is not None:
        log.info("the model server %s is reached through the proxy %s", base_url, _safe(proxy))
    inner = httpx.AsyncHTTPTransport(
        verify=tls if tls is not None else True,
        proxy=proxy,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=keep),
    )
    return BoundedTransport(inner)


def _safe(proxy: str) -> str:
    """A proxy URL without its password, for the log."""
    parts = urlsplit(proxy)
    if parts.password is None:
        return proxy
    return proxy.replace(f":{parts.password}@", ":***@", 1)
