"""Model clients in lanes: small pools that add up to the connections asked for, each call on
the least busy one, an idle client reused first."""

from __future__ import annotations

from contextlib import ExitStack

from adapters.langchain.lanes import Lanes
from adapters.ollama.model import KEEPALIVE, OllamaModel


def test_calls_take_the_least_busy_lane_and_an_idle_model_reuses_the_first() -> None:
    lanes = Lanes(lambda n: {"pool": n}, connections=128, lanes=16)
    assert len(lanes.clients) == 16 and all(c["pool"] == 8 for c in lanes.clients)
    with ExitStack() as calls:
        taken = [id(calls.enter_context(lanes.lane())) for _ in range(20)]
        assert len(set(taken[:16])) == 16 and taken[16:] == [id(c) for c in lanes.clients[:4]]
        assert sorted(lanes.busy) == [1] * 12 + [2] * 4
    assert lanes.busy == [0] * 16
    with lanes.lane() as first:
        assert first is lanes.clients[0]


def test_the_ollama_model_spreads_its_connections_over_small_pools() -> None:
    model = OllamaModel("http://127.0.0.1:1", "qwen3")
    pools = [c._async_client._client._transport._pool for c in model._lanes.clients]  # type: ignore[union-attr]
    assert len(pools) > 1 and sum(p._max_keepalive_connections for p in pools) == KEEPALIVE
    assert all(p._max_connections == KEEPALIVE for p in pools)  # a lane never makes a call wait
    assert len({id(p._ssl_context) for p in pools}) == 1  # one CA bundle loaded, not one per client
