"""Who is asking: users, their API tokens and the principal a request acts as.

A principal is resolved once, at the edge (a bearer token, a login cookie or a trusted
proxy's header), and handed to the use cases. The server's own `API_TOKEN` stays the
bootstrap admin, whose id is `admin`: a generated user id is `u_` and 16 hex digits, so no
user can ever be that admin. An API token is 32 random bytes shown once; a store keeps its
SHA-256 only (a token is unguessable, so it needs no salt nor a slow hash), and a copy of
the database yields no token that works.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from domain.errors import InvalidInput

BOOTSTRAP_ID = "admin"
TOKEN_PREFIX = "sophos_"
TOKEN_BYTES = 32
MAX_LABEL = 100
MAX_NAME = 254  # an e-mail address, which a proxy may send as the user's name
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]*")
_TOKEN = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]{43}")


class Role(StrEnum):
    ADMIN = "admin"
    USER = "user"


@dataclass(frozen=True)
class Principal:
    """Who a request acts as. `sees_all`: an admin with ADMIN_SEES_ALL, who reaches every
    user's conversations."""

    user_id: str
    name: str
    role: Role
    sees_all: bool = False

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN


BOOTSTRAP_ADMIN = Principal(BOOTSTRAP_ID, BOOTSTRAP_ID, Role.ADMIN)
# this machine's own commands (the CLI without --server): whoever can read the database
# reads every conversation anyway; what it creates is the bootstrap admin's
LOCAL = Principal(BOOTSTRAP_ID, BOOTSTRAP_ID, Role.ADMIN, sees_all=True)


def sees(principal: Principal, owner: str) -> bool:
    """Whether `principal` may reach a conversation of the user `owner`. Another user's
    conversation is answered as unknown (404), never as forbidden: no existence leak."""
    return principal.sees_all or principal.user_id == owner


def owner_filter(principal: Principal) -> str | None:
    """The owner a store query keeps, None for a principal who sees every user's."""
    return None if principal.sees_all else principal.user_id


@dataclass(frozen=True)
class User:
    id: str
    name: str
    role: Role
    disabled: bool
    created_at: datetime

    def principal(self) -> Principal:
        return Principal(self.id, self.name, self.role)


@dataclass(frozen=True)
class ApiToken:
    """A token's record (never the token): `revoked_at` set once revoked."""

    id: str
    user_id: str
    label: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class NewToken:
    """A token as it is made: `token` goes to the person once, `hash` to the store."""

    id: str
    token: str
    hash: str


def new_user_id() -> str:
    return f"u_{secrets.token_hex(8)}"


def new_token() -> NewToken:
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    return NewToken(f"t_{secrets.token_hex(8)}", token, token_hash(token.encode("ascii")))


def looks_like_token(given: bytes) -> bool:
    """Whether a credential has a user token's shape (anything else is never looked up)."""
    try:
        return _TOKEN.fullmatch(given.decode("ascii")) is not None
    except UnicodeDecodeError:
        return False


def token_hash(given: bytes) -> str:
    return hashlib.sha256(given).hexdigest()


def user_name(value: str) -> str:
    """A user's name as given (a login, or a proxy's header value such as an e-mail);
    InvalidInput when it cannot be one. `admin` is the bootstrap admin's, taken."""
    name = value.strip()
    if not name or len(name) > MAX_NAME or _NAME.fullmatch(name) is None:
        raise InvalidInput("a user name is 1-254 letters, digits or . _ @ + - (starting with a letter or digit)")
    if name.lower() == BOOTSTRAP_ID:
        raise InvalidInput("'admin' is the bootstrap admin (API_TOKEN); choose another name")
    return name


def token_label(value: str) -> str:
    label = value.strip()
    if len(label) > MAX_LABEL or any(ord(c) < 32 for c in label):
        raise InvalidInput(f"a token label is at most {MAX_LABEL} printable characters")
    return label


class TrustedProxies:
    """TRUSTED_PROXY_IPS: the addresses (or networks) of the proxies in front of the server.
    From them alone are `X-Forwarded-For` and `X-Forwarded-Proto` believed (and, with
    AUTH=proxy, the user header); a proxy is known by the socket's peer, never by a header a
    client can write. Empty: nobody is a proxy, every client is who its socket says."""

    def __init__(self, setting: str) -> None:
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in setting.split(","):
            if entry.strip():
                try:
                    self.networks.append(ipaddress.ip_network(entry.strip(), strict=False))
                except ValueError:
                    raise InvalidInput(f"TRUSTED_PROXY_IPS: {entry.strip()!r} is not an address or a network") from None

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, peer: str) -> bool:
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks)

    def entries(self) -> list[str]:
        """The networks as text, each IPv4 one also as IPv4-mapped IPv6 (`::ffff:10.0.0.5`,
        the peer of an IPv4 client on a dual-stack socket)."""
        mapped = [f"::ffff:{n.network_address}/{96 + n.prefixlen}" for n in self.networks if n.version == 4]
        return [str(n) for n in self.networks] + mapped


class ProxyTrust:
    """AUTH=proxy: the header naming the user, believed from TRUSTED_PROXY_IPS only (see
    TrustedProxies: by the socket's peer, never a forwarded-for header a client can write)."""

    def __init__(self, header: str, trusted: str, auto_create: bool) -> None:
        self.header = header.strip().lower()
        self.auto_create = auto_create
        self.proxies = TrustedProxies(trusted)

    def trusts(self, peer: str) -> bool:
        return self.proxies.trusts(peer)
