"""`GET /api/webhooks/secret`: the secret that signs the user's webhook calls (docs/schedules.md
#webhooks). Declared in ROUTES, which the route table (entrypoints/http/api.py) takes in."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from entrypoints.http.openapi import Answer, ApiRoute
from entrypoints.http.principal import principal_of


async def webhook_secret(request: Request) -> Response:
    secret = await request.app.state.services.webhooks().secret(principal_of(request))
    return JSONResponse({"secret": secret}, headers={"Cache-Control": "no-store"})


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "/api/webhooks/secret",
        "GET",
        webhook_secret,
        "The secret that signs your webhook calls (X-Sophos-Signature: sha256=HMAC-SHA256 of the body), made on first use",
        Answer(schema={"type": "object", "properties": {"secret": {"type": "string"}}}),
        errors=(501,),
    ),
)
