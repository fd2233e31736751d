"""Webhooks: a URL a run names (or its schedule does), called once the run's outcome is
recorded, with that outcome as JSON, signed with its owner's secret, from a durable outbox.

What may be called is the operator's decision (WEBHOOK_ALLOWED_HOSTS): with no list, any
host whose every address is public (no private, loopback, link-local, multicast or reserved
one: the server makes the request for a user, who must not reach what only the server
can); with a list, only the host names, `.domain` suffixes and networks (CIDRs, or single
addresses) it names. A host is resolved when the webhook is named and again at each
delivery, which connects to an address it checked (DNS rebinding gains nothing)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from domain.errors import ErrorCode, InvalidInput

MAX_URL = 2_000  # characters
MAX_ATTEMPTS = 8  # deliveries tried before a webhook is given up (about 40 minutes at 10 s)
MAX_DELAY = 3_600.0  # seconds: the longest wait between two attempts
SIGNATURE_HEADER = "X-Sophos-Signature"
DELIVERY_HEADER = "X-Sophos-Delivery"

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class WebhookNotAllowed(InvalidInput):
    """Raised when a webhook's URL is malformed or names an address the operator did not
    allow (WEBHOOK_ALLOWED_HOSTS; by default any private, loopback or link-local one)."""

    code = ErrorCode.WEBHOOK_NOT_ALLOWED
    default_message = "This webhook address is not allowed"


@dataclass(frozen=True)
class WebhookTarget:
    """A webhook URL, checked for its form: http(s), a host, no user or password."""

    url: str
    scheme: str
    host: str  # lower-case, without brackets
    port: int


def parse_webhook(url: object) -> WebhookTarget:
    """The URL as a target; WebhookNotAllowed for anything but an http(s) URL with a host."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise WebhookNotAllowed(f"webhook must be an http(s) URL of at most {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise WebhookNotAllowed(f"webhook is not a valid URL: {e}") from e
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookNotAllowed("webhook must be an http or https URL with a host")
    if parts.username is not None or parts.password is not None:
        raise WebhookNotAllowed("webhook must not carry a user name or password (it is signed instead)")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise WebhookNotAllowed("webhook must not contain spaces or control characters")
    return WebhookTarget(url, parts.scheme, parts.hostname.lower().rstrip("."), port or (443 if parts.scheme == "https" else 80))


@dataclass(frozen=True)
class AllowedHosts:
    """WEBHOOK_ALLOWED_HOSTS: empty, any public address; otherwise only what it names."""

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # ".example.com": the domain and every name under it
    networks: tuple[IpNetwork, ...] = ()

    @classmethod
    def parse(cls, text: str) -> AllowedHosts:
        """Comma-separated host names, `.domain` suffixes and CIDRs (or addresses);
        ValueError naming a malformed entry."""
        names, suffixes, networks = set[str](), list[str](), list[IpNetwork]()
        for raw in (part.strip().lower() for part in text.split(",")):
            if not raw:
                continue
            if raw.startswith("."):
                if not _is_name(raw[1:]):
                    raise ValueError(f"not a .domain suffix: {raw!r}")
                suffixes.append(raw)
                continue
            try:
                networks.append(ipaddress.ip_network(raw.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            if "/" in raw or not _is_name(raw):
                raise ValueError(f"not a host name, .domain suffix or CIDR: {raw!r}")
            names.add(raw.rstrip("."))
        return cls(frozenset(names), tuple(suffixes), tuple(networks))

    @property
    def listed(self) -> bool:
        return bool(self.names or self.suffixes or self.networks)

    def names_host(self, host: str) -> bool:
        return host in self.names or any(host == s[1:] or host.endswith(s) for s in self.suffixes)

    def allows(self, target: WebhookTarget, addresses: Iterable[IpAddress]) -> str | None:
        """Why the target, resolved to `addresses`, may not be called (None: it may)."""
        found = [_plain(a) for a in addresses]
        if not found:
            return f"{target.host} has no address"
        if self.listed:
            if self.names_host(target.host):
                return None
            if all(any(a in n for n in self.networks if n.version == a.version) for a in found):
                return None
            return f"{target.host} is not among WEBHOOK_ALLOWED_HOSTS"
        for a in found:
            if not a.is_global or a.is_multicast:
                return f"{target.host} resolves to a private, loopback or link-local address ({a})"
        return None


def _plain(address: IpAddress) -> IpAddress:
    """An IPv4-mapped IPv6 address as the IPv4 address it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_name(text: str) -> bool:
    labels = text.rstrip(".").split(".")
    return bool(text) and len(text) <= 253 and all(0 < len(x) <= 63 and x.replace("-", "").isalnum() for x in labels)


def literal_address(host: str) -> IpAddress | None:
    """The host as an IP address when it is one (no name to resolve)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclass(frozen=True)
class Delivery:
    """One webhook call in the outbox: its id (the receiver's key to process it once:
    the same on every attempt), whose secret signs it, where, and the JSON body.
    `attempts`: how many were claimed so far (this one included, once claimed)."""

    id: str
    owner: str
    url: str
    body: str
    created_at: datetime
    attempts: int = 0
    run_id: str = ""


def signature(secret: str, body: bytes) -> str:
    """The X-Sophos-Signature header's value: HMAC-SHA256 of the body, hex."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def retry_delay(attempts: int, first: float) -> float | None:
    """Seconds before the next attempt after `attempts` failed ones (doubling from `first`,
    at most MAX_DELAY); None once MAX_ATTEMPTS were made: the delivery is given up."""
    if attempts >= MAX_ATTEMPTS:
        return None
    return float(min(first * 2.0 ** max(attempts - 1, 0), MAX_DELAY))
