"""Webhooks (domain.webhooks): a URL checked against the operator's rule when a run or a
schedule names it, each user's signing secret, and the delivery of the outbox the run
store fills as runs end. Any live process delivers (the supervisor calls `deliver_due`):
a delivery is claimed for one attempt, called, then settled (delivered, retried later with
a doubling wait, or given up); a process that dies mid-attempt leaves its claim to lapse,
and another process calls again with the same delivery id."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from domain.model import utc_now
from domain.principals import Principal
from domain.webhooks import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    AllowedHosts,
    Delivery,
    IpAddress,
    WebhookNotAllowed,
    WebhookTarget,
    literal_address,
    parse_webhook,
    retry_delay,
    signature,
)
from ports.metrics import NO_METRICS, MetricsPort
from ports.webhooks import AddressResolver, WebhookOutbox, WebhookSender

log = logging.getLogger(__name__)

BATCH = 20  # deliveries claimed (and called at once) per round


class WebhookService:
    """`retry_seconds`: the wait before the first retry; `lease`: seconds after which an
    attempt whose process went silent is taken again (longer than a call may take)."""

    def __init__(
        self,
        outbox: WebhookOutbox,
        resolver: AddressResolver,
        sender: WebhookSender,
        allowed: AllowedHosts = AllowedHosts(),  # noqa: B008 - a frozen value
        metrics: MetricsPort = NO_METRICS,
        retry_seconds: float = 10.0,
        timeout: float = 10.0,
        clock: Callable[[], datetime] = utc_now,
        period: float = 0.5,
    ) -> None:
        self.outbox = outbox
        self.resolver = resolver
        self.sender = sender
        self.allowed = allowed
        self.metrics = metrics
        self.retry_seconds = retry_seconds
        self.lease = 3 * timeout + 5
        self.clock = clock
        self.period = period

    async def check(self, url: object) -> str:
        """The URL, when the operator allows calling it (WEBHOOK_ALLOWED_HOSTS: every
        address it resolves to is checked); WebhookNotAllowed otherwise."""
        target = parse_webhook(url)
        await self._address(target)
        return target.url

    async def _address(self, target: WebhookTarget) -> IpAddress:
        """An address of the target to connect to, all of its addresses allowed."""
        literal = literal_address(target.host)
        addresses: Sequence[IpAddress] = (
            [literal] if literal is not None else await self.resolver.resolve(target.host, target.port)
        )
        why = self.allowed.allows(target, addresses)
        if why is not None:
            raise WebhookNotAllowed(f"This webhook address is not allowed: {why}")
        return addresses[0]

    async def secret(self, by: Principal) -> str:
        """`by`'s signing secret (made on first use): the receiver checks X-Sophos-Signature
        (HMAC-SHA256 of the body) with it."""
        return await self.outbox.webhook_secret(by.user_id, secrets.token_hex(32))

    async def deliver_due(self) -> int:
        """One round: call the deliveries due now, at once; how many were delivered."""
        claimed = await self.outbox.claim_deliveries(self.clock(), self.lease, BATCH)
        if not claimed:
            return 0
        done = await asyncio.gather(*(self._deliver(d) for d in claimed))
        return sum(done)

    async def _deliver(self, delivery: Delivery) -> bool:
        ctx = {"run_id": delivery.run_id, "delivery_id": delivery.id}
        error = await self._call(delivery)
        if error is None:
            settled = await self.outbox.settle_delivery(delivery, None, None)
            self.metrics.webhook_delivered("delivered")
            log.info("webhook delivered (attempt %d)", delivery.attempts, extra=ctx)
            return settled
        delay = retry_delay(delivery.attempts, self.retry_seconds)
        next_at = self.clock() + timedelta(seconds=delay) if delay is not None else None
        await self.outbox.settle_delivery(delivery, next_at, error[:500])
        self.metrics.webhook_delivered("retried" if next_at is not None else "failed")
        if next_at is None:
            log.warning("webhook given up after %d attempts: %s", delivery.attempts, error, extra=ctx)
        else:
            log.info("webhook attempt %d failed (%s); again in %.0f s", delivery.attempts, error, delay, extra=ctx)
        return False

    async def _call(self, delivery: Delivery) -> str | None:
        """One attempt; None when delivered, else why not."""
        try:
            target = parse_webhook(delivery.url)
            address = await self._address(target)  # again: what the name resolves to may have changed
        except WebhookNotAllowed as e:
            return e.message
        secret = await self.outbox.webhook_secret(delivery.owner, secrets.token_hex(32))
        body = delivery.body.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Sophos-Webhook/1",
            SIGNATURE_HEADER: signature(secret, body),
            DELIVERY_HEADER: delivery.id,
        }
        return await self.sender.send(target, address, body, headers)
