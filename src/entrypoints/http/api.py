"""The /api routes, declared once: each method of each path with its handler, its parameters,
its request body, its answer and its error statuses. app.py mounts this table and
/api/openapi.json is written from it (entrypoints/http/openapi.py): a route added here is
served and documented at once, and one left out is neither."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from entrypoints.http import files, knowledge, memory, presets, routes, schedules, session, transfer, usage, webhooks
from entrypoints.http.api_schemas import (
    COMPONENTS,
    CONVERSATION,
    MODELS,
    NONE,
    QUEUED,
    QUEUED_ID,
    SEARCH,
    STARTED,
    SUMMARY,
    TEXT,
    UUID,
    chat_body,
    closed,
)
from entrypoints.http.openapi import Answer, ApiRoute, Param, openapi_document


async def document(request: Request) -> Response:
    """This table as OpenAPI, with the server's own attachment limits."""
    return JSONResponse(openapi_document(ROUTES, COMPONENTS, request.app.state.services.attachment_limits))


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "/api/chat",
        "POST",
        routes.post_chat,
        "Start a run: a new message, a resume, an edit (editOf) or a regenerate, on a new branch",
        STARTED,
        body=chat_body,
        errors=(400, 404, 409, 413, 415, 429, 503),
    ),
    ApiRoute(
        "/api/chat",
        "GET",
        routes.get_chat,
        "Server-sent events of the conversation's active run",
        Answer(schema=TEXT, media="text/event-stream"),
        params=(
            Param("conversation", "query", TEXT, required=True),
            Param("Last-Event-ID", "header", TEXT),
            Param(
                "follow",
                "query",
                {"type": "string", "enum": ["queue"]},
                description=("queue: after a run's terminal event, go on with the run that follows it (a `started` event first)"),
            ),
        ),
    ),
    ApiRoute(
        "/api/chat/cancel",
        "POST",
        routes.cancel_chat,
        "Cancel the active run",
        body=closed({"conversation": TEXT}, "conversation"),
        errors=(400, 404, 409, 413),
    ),
    ApiRoute(
        "/api/conversations",
        "GET",
        routes.list_conversations,
        "Conversations, most recently updated first",
        Answer(schema={"type": "object", "properties": {"conversations": {"type": "array", "items": SUMMARY}}}),
        params=(
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}),
            Param("before", "query", TEXT),
            Param(
                "q",
                "query",
                {"type": "string", "maxLength": 200},
                description="only conversations whose title contains this text (case-insensitive)",
            ),
            Param(
                "idPrefix",
                "query",
                {"type": "string", "minLength": 4, "maxLength": 36},
                description=("alone: the (at most 11) conversations whose id starts with these 4 to 36 hex digits and dashes"),
            ),
            *presets.LIST_PARAMS,
        ),
        errors=(400, 500),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}",
        "GET",
        routes.get_conversation,
        "A conversation with its messages",
        Answer(schema={"type": "object", "properties": {"context": {"$ref": "#/components/schemas/Context"}}}),
        params=(CONVERSATION,),
        errors=(400, 404, 500),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}",
        "PATCH",
        routes.patch_conversation,
        "Rename (title), choose the model and instructions, pin or archive, and/or switch the active branch "
        "(activeBranch: a branch number)",
        params=(CONVERSATION,),
        body=closed(
            {
                "title": {"type": "string", "minLength": 1, "maxLength": 200},
                "activeBranch": {"type": "integer", "minimum": 1},
                "model": {"type": "string", "nullable": True, "maxLength": 200},
                "system": {"type": "string", "nullable": True, "maxLength": 16000},
                "systemMode": presets.MODE,
                "pinned": {"type": "boolean"},
                "archived": {"type": "boolean"},
            },
            minProperties=1,
        ),
        errors=(400, 404, 409, 413),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}",
        "DELETE",
        routes.delete_conversation,
        "Delete the conversation, its runs and its checkpoints (a temporary one with a run going answers 202: "
        "it is deleted when the run ends)",
        NONE,
        params=(CONVERSATION,),
        errors=(400, 404, 409),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}/export",
        "GET",
        routes.export_conversation,
        "Markdown transcript; the checkpoint JSONL with format=jsonl; with format=json the whole conversation "
        "(every branch, every message, the approvals' decisions) as POST /api/import reads it",
        Answer(schema=TEXT, media="text/markdown"),
        params=(CONVERSATION, Param("format", "query", TEXT)),
        errors=(400, 404),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}/attachments/{digest}",
        "GET",
        files.get_attachment,
        "A file a message of the conversation carries, by its SHA-256 (the detail's messages[].attachments[].digest): "
        "images as themselves, text as text/plain, PDF as a download",
        Answer(schema={"type": "string", "format": "binary"}, media="*/*"),
        params=(CONVERSATION, Param("digest", "path", {"type": "string", "pattern": "^[0-9a-f]{64}$"})),
        errors=(400, 404),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}/fork",
        "POST",
        routes.fork_conversation,
        "A new conversation from this one's messages up to messageIndex (its tool results included)",
        Answer(201, {"type": "object", "properties": {"conversation": SUMMARY}}),
        params=(CONVERSATION,),
        body=closed({"messageIndex": {"type": "integer", "minimum": 0}}, "messageIndex"),
        errors=(400, 404, 413),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}/queue/{queued_id}",
        "PATCH",
        routes.patch_queued,
        "Edit a queued message while it waits",
        Answer(schema={"type": "object", "properties": {"conversation": UUID, "queued": QUEUED}}),
        params=(CONVERSATION, QUEUED_ID),
        body=closed({"message": TEXT}, "message"),
        errors=(400, 404, 413, 503),
    ),
    ApiRoute(
        "/api/conversations/{conversation_id}/queue/{queued_id}",
        "DELETE",
        routes.delete_queued,
        "Drop a queued message before it starts",
        NONE,
        params=(CONVERSATION, QUEUED_ID),
        errors=(400, 404, 503),
    ),
    ApiRoute(
        "/api/search",
        "GET",
        routes.search,
        "Full-text search over titles and user and assistant messages, best first",
        Answer(schema=SEARCH),
        params=(
            Param("q", "query", {"type": "string", "minLength": 1, "maxLength": 500}, required=True),
            Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 100}),
            Param("before", "query", TEXT),
        ),
        errors=(400, 503),
    ),
    ApiRoute(
        "/api/models",
        "GET",
        routes.list_models,
        "The model server's models (Ollama /api/tags and /api/show, OpenAI-compatible /models), kept 10 s; "
        "when the server cannot say, no models and `error`",
        Answer(schema=MODELS),
    ),
    ApiRoute(
        "/api/export",
        "GET",
        transfer.export_all,
        "Every conversation as a zip of their JSON exports (format=json), one file each, and sophos-user.json: "
        "the user's store items (memories among them) and knowledge collections",
        Answer(schema={"type": "string", "format": "binary"}, media="application/zip"),
        errors=(503,),
    ),
    ApiRoute(
        "/api/import",
        "POST",
        transfer.import_conversations,
        "Import the body: a Sophos JSON export (one conversation or a list), the zip of GET /api/export, or "
        "ChatGPT's conversations.json. Each conversation becomes a new one; a malformed file stores nothing (400). "
        "A sophos-user.json (in the zip or alone) stores its items and collections back for the caller",
        Answer(
            201,
            {
                "type": "object",
                "properties": {
                    "conversations": {"type": "array", "items": SUMMARY},
                    "items": {"type": "integer", "description": "store items imported (with a sophos-user.json)"},
                    "collections": {"type": "integer", "description": "collections imported (with a sophos-user.json)"},
                },
            },
        ),
        media={"application/json": {}, "application/octet-stream": {"type": "string", "format": "binary"}},
        errors=(400, 408, 413, 501, 503),
    ),
    ApiRoute(
        "/api/approvals/always",
        "GET",
        routes.list_allow_rules,
        "The tools always allowed (never asked before they run)",
        Answer(
            schema={
                "type": "object",
                "properties": {
                    "alwaysAllowed": {"type": "array", "items": {"type": "object", "properties": {"tool": TEXT, "since": TEXT}}}
                },
            }
        ),
        errors=(503,),
    ),
    ApiRoute(
        "/api/approvals/always/{tool:path}",
        "DELETE",
        routes.revoke_allow_rule,
        'Ask again before the tool runs (a "/" in the name may be sent as is or as %2F)',
        NONE,
        params=(Param("tool", "path", TEXT),),
        errors=(400, 404, 503),
    ),
    ApiRoute(
        session.PATH,
        "GET",
        session.get_session,
        "Whether the page needs a login (API_TOKEN set, or users) and has one, and as whom",
        Answer(
            schema={
                "type": "object",
                "properties": {
                    "required": {"type": "boolean"},
                    "authenticated": {"type": "boolean"},
                    "user": {
                        "type": "object",
                        "description": "who is logged in (when a login is needed and there is "
                        "one); the bootstrap admin is `admin`",
                        "properties": {"name": {"type": "string"}, "role": {"type": "string", "enum": ["admin", "user"]}},
                    },
                },
            }
        ),
    ),
    ApiRoute(
        session.PATH,
        "POST",
        session.login,
        "Log the page in: the API token for an HttpOnly, SameSite=Strict session cookie (sophos_session_<port>) "
        "naming a session that ends SESSION_SECONDS later; 429 TOO_MANY_ATTEMPTS (with Retry-After) after 10 "
        "wrong tokens from one address in a minute",
        body=closed({"token": TEXT}, "token"),
        errors=(400, 401, 403, 413, 429),
    ),
    ApiRoute(
        session.PATH,
        "DELETE",
        session.logout,
        "Log out: end this browser's session on the server and clear its cookie",
        NONE,
        errors=(403,),
    ),
    ApiRoute(
        session.EVERYWHERE_PATH,
        "DELETE",
        session.logout_everywhere,
        "Log out everywhere: end every login session (every browser must log in again)",
        NONE,
        errors=(401, 403, 429),
    ),
    *presets.ROUTES,
    *schedules.ROUTES,
    *webhooks.ROUTES,
    *usage.ROUTES,
    *memory.ROUTES,
    *knowledge.ROUTES,
    ApiRoute("/api/healthz", "GET", routes.healthz, "Liveness"),
    ApiRoute("/api/readyz", "GET", routes.readyz, "Model and tool readiness", errors=(503,)),
    ApiRoute("/api/openapi.json", "GET", document, "This document"),
)
