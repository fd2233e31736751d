"""Login sessions (the page's cookie) and failed-login limits, as plain functions and values.

A session id is 256 random bits, handed to the browser once and never stored: the store
keeps its SHA-256 (`session_key`), so a copy of the database (a backup, a read-only
account) yields no cookie that works. Guessing a live id is hopeless, so the key needs no
salt or slow hash. Each session also records a fingerprint of the API token it was made
under: changing API_TOKEN ends every session, as it did when the cookie was an HMAC of it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import re
import secrets
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime, timedelta

SESSION_ID_BYTES = 32
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{43}")  # token_urlsafe(32): 43 characters, no padding
_FINGERPRINT_LABEL = b"sophos session token fingerprint v2"
_KEY_LABEL = b"sophos session id v2\x00"


def new_session_id() -> str:
    return secrets.token_urlsafe(SESSION_ID_BYTES)


def well_formed(value: str) -> bool:
    """Whether a cookie value can be a session id (anything else is refused unread)."""
    return _SESSION_ID.fullmatch(value) is not None


def session_key(session_id: str) -> str:
    """What a store keeps instead of the id."""
    return hashlib.sha256(_KEY_LABEL + session_id.encode("ascii")).hexdigest()


def token_fingerprint(token: bytes) -> str:
    """Names the API token without revealing it (an HMAC keyed by the token itself)."""
    return hmac.new(token, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class NewSession:
    """A login: `session_id` goes to the browser, `key` to the store."""

    session_id: str
    key: str
    expires_at: datetime


def open_session(now: datetime, lifetime_seconds: float) -> NewSession:
    """A fresh session that ends `lifetime_seconds` after `now`. The end is fixed at login
    and never pushed back by use: validating a request then only reads, and a copied cookie
    stops working at a known time however busy its thief keeps it."""
    session_id = new_session_id()
    return NewSession(session_id, session_key(session_id), now + timedelta(seconds=lifetime_seconds))


def attempt_source(host: str) -> str:
    """What failed logins are counted against: the client's address, or for IPv6 its /64,
    since one machine is commonly handed a whole /64 and could rotate within it."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class FailedAttempts:
    """Failed logins per client address over a sliding window: after `limit` failures within
    `window` seconds, that address is refused until the oldest of them leaves the window.
    A refused address learns nothing, not even whether a token it sends is right. Memory is
    bounded: at most `max_clients` addresses are remembered (the least recently failing
    are forgotten first), each with at most `limit` times."""

    def __init__(self, limit: int = 10, window: float = 60.0, max_clients: int = 10_000) -> None:
        self.limit = limit
        self.window = window
        self.max_clients = max_clients
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> deque[float] | None:
        times = self._failures.get(client)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[client]
            return None
        return times

    def retry_after(self, client: str, now: float) -> int | None:
        """Whole seconds before `client` may try again (at least 1), or None when it may now."""
        times = self._recent(client, now)
        if times is None or len(times) < self.limit:
            return None
        return max(1, math.ceil(times[0] + self.window - now))

    def record(self, client: str, now: float) -> int:
        """Count one failure of `client`; how many it has in the window now."""
        times = self._recent(client, now)
        if times is None:
            times = self._failures[client] = deque(maxlen=self.limit)
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)
        self._failures.move_to_end(client)
        times.append(now)
        return len(times)
