"""The webhook rules (domain.webhooks): which URLs and addresses may be called, the
signature a receiver checks, and the wait between attempts."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

import pytest

from domain.webhooks import MAX_ATTEMPTS, AllowedHosts, WebhookNotAllowed, parse_webhook, retry_delay, signature


def addr(*texts: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    return [ipaddress.ip_address(t) for t in texts]


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/x", "http://", "http://user:pw@example.com/", "example.com/hook", "http://exa mple.com/", "x" * 3000, 5],
)
def test_a_webhook_must_be_an_http_url_with_a_host_and_no_credentials(url: object) -> None:
    with pytest.raises(WebhookNotAllowed) as e:
        parse_webhook(url)
    assert e.value.code.value == "WEBHOOK_NOT_ALLOWED"


def test_a_webhook_url_is_read_for_its_host_and_port() -> None:
    t = parse_webhook("https://Hooks.Example.com./in?x=1")
    assert (t.scheme, t.host, t.port) == ("https", "hooks.example.com", 443)
    assert parse_webhook("http://[::1]:8080/").host == "::1"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "fd00::1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "100.64.0.1",
        "224.0.0.1",
    ],
)
def test_by_default_no_private_loopback_or_link_local_address_may_be_called(address: str) -> None:
    target = parse_webhook("http://hooks.example.com/")
    assert AllowedHosts().allows(target, addr(address)) is not None


def test_by_default_a_name_is_refused_when_any_of_its_addresses_is_private() -> None:
    target = parse_webhook("http://hooks.example.com/")
    assert AllowedHosts().allows(target, addr("93.184.216.34")) is None
    assert AllowedHosts().allows(target, addr("93.184.216.34", "10.0.0.1")) is not None
    assert AllowedHosts().allows(target, []) is not None  # no address: nothing to call


def test_a_list_allows_only_its_names_suffixes_and_networks() -> None:
    allowed = AllowedHosts.parse("hooks.internal, .corp.example, 10.20.0.0/16, 127.0.0.1")
    assert allowed.allows(parse_webhook("http://hooks.internal/"), addr("10.9.9.9")) is None
    assert allowed.allows(parse_webhook("http://a.b.corp.example/"), addr("192.168.0.1")) is None
    assert allowed.allows(parse_webhook("http://corp.example/"), addr("192.168.0.1")) is None
    assert allowed.allows(parse_webhook("http://127.0.0.1:9/"), addr("127.0.0.1")) is None
    assert allowed.allows(parse_webhook("http://svc/"), addr("10.20.3.4")) is None
    assert allowed.allows(parse_webhook("http://svc/"), addr("10.20.3.4", "10.21.0.1")) is not None
    # a listed setting is the whole list: a public host not on it is refused too
    assert allowed.allows(parse_webhook("http://example.com/"), addr("93.184.216.34")) is not None
    assert allowed.allows(parse_webhook("http://evilcorp.example/"), addr("10.20.0.1")) is None  # by its address


@pytest.mark.parametrize("text", ["http://x", "a b", ".", "10.0.0.0/33", "bad_name"])
def test_a_malformed_allowed_hosts_entry_is_named(text: str) -> None:
    with pytest.raises(ValueError, match="not a"):
        AllowedHosts.parse(text)


def test_the_signature_is_hmac_sha256_of_the_body() -> None:
    body = b'{"runId":"r1"}'
    assert signature("s3cret", body) == "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()


def test_retries_wait_twice_as_long_each_time_and_stop_after_the_last_attempt() -> None:
    assert [retry_delay(n, 10) for n in (1, 2, 3)] == [10, 20, 40]
    assert retry_delay(MAX_ATTEMPTS - 1, 10000) == 3600
    assert retry_delay(MAX_ATTEMPTS, 10) is None
