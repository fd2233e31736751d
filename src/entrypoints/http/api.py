"""The /api routes, declared once: each method of each path with its handler, its parameters,
its request body, its answer and its error statuses. app.py mounts this table and
/api/openapi.json is written from it (entrypoints/http/openapi.py): a route added here is
served and documented at once, and one left out is neither."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from domain.attachments import AttachmentLimits, size_text
from entrypoints.http import files, presets, routes, session, transfer
from entrypoints.http.openapi import Answer, ApiRoute, Param, Schema, openapi_document

UUID: Schema = {"type": "string", "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"}
TEXT: Schema = {"type": "string"}
OBJECT: Schema = {"type": "object"}
SUMMARY: Schema = {"$ref": "#/components/schemas/ConversationSummary"}
QUEUED: Schema = {"type": "object", "properties": {
    "id": TEXT, "position": {"type": "integer"}, "text": TEXT, "createdAt": TEXT}}
CONVERSATION = Param("conversation_id", "path", TEXT)
QUEUED_ID = Param("queued_id", "path", TEXT)
NONE = Answer(204)


def closed(properties: Schema, *required: str, **more: object) -> Schema:
    """A JSON object with these properties only."""
    schema: Schema = {"type": "object", "additionalProperties": False, **({"required": list(required)} if required else {}),
                      **more, "properties": properties}
    return schema


def chat_body(limits: AttachmentLimits) -> Schema:
    """POST /api/chat's body, with this server's attachment limits."""
    attachments = {
        "type": "array", "maxItems": limits.max_files,
        "description": "files of a new message (also as multipart/form-data: fields message, conversation, model, "
                       f"system and files under `attachments`); at most {limits.max_files}, "
                       f"{size_text(limits.max_bytes)} each; {limits.shown} (MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES, "
                       "ATTACHMENT_TYPES)",
        "items": closed({"name": TEXT, "type": TEXT, "data": {"type": "string", "format": "byte"}}, "name", "data"),
    }
    decision = closed({"type": {"type": "string", "enum": ["approve", "edit", "reject", "retry", "skip"]},
                       "args": OBJECT, "message": TEXT, "always": {"type": "boolean"}}, "type")
    return closed({
        "message": TEXT,
        "conversation": TEXT,
        "resume": {"type": "boolean"},
        "decision": {"type": "string", "enum": ["retry", "skip"]},
        "editOf": {"type": "integer", "minimum": 0,
                   "description": "index of the user message the new message replaces, on a new branch"},
        "regenerate": {"type": "boolean", "description": "answer the last user message again, on a new branch"},
        "model": {"type": "string", "nullable": True, "maxLength": 200,
                  "description": "the conversation's model from this turn on (GET /api/models); null: the server's "
                                 "default; unknown: 400 UNKNOWN_MODEL, nothing stored"},
        "system": {"type": "string", "nullable": True, "maxLength": 16000,
                   "description": "the conversation's instructions from this turn on; null: config/system.md alone"},
        "systemMode": presets.MODE,
        "temporary": {"type": "boolean", "description": "a new conversation that is not kept: never listed nor "
                                                        "searched, deleted once its page leaves it"},
        "attachments": attachments,
        "multitask": {"type": "string", "enum": ["reject", "enqueue", "interrupt", "rollback"],
                      "description": "what a new message does while the conversation has an active or waiting run "
                                     "(default reject: 409)"},
        "decisions": {"type": "object", "additionalProperties": decision},
    })


STARTED = Answer(
    schema={"type": "object", "properties": {"conversation": UUID, "run": TEXT, "queued": QUEUED}},
    # with `Accept: text/event-stream`: the run's events as GET /api/chat streams them, its ids in headers
    more={"text/event-stream": TEXT},
    headers={
        "X-Conversation-Id": {"description": "the conversation (streamed answer only)", "schema": UUID},
        "X-Run-Id": {"description": "the run (streamed answer only)", "schema": TEXT},
        "X-Queued-Id": {"description": "the queued message (multitask enqueue behind an active run)", "schema": TEXT},
    },
)
MODELS: Schema = {"type": "object", "required": ["default", "models"], "properties": {
    "default": TEXT,
    "models": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
        "name": TEXT, "size": {"type": "integer", "nullable": True}, "context": {"type": "integer", "nullable": True},
        "capabilities": {"type": "array", "items": TEXT}, "family": {"type": "string", "nullable": True},
        "default": {"type": "boolean"}}}},
    "error": OBJECT,
    "attachments": {"type": "object", "description": "what a message may carry here", "properties": {
        "maxBytes": {"type": "integer"}, "maxFiles": {"type": "integer"}, "types": {"type": "array", "items": TEXT},
        "shown": TEXT}},
    "autoTitle": {"type": "boolean", "description": "AUTO_TITLE: the model titles a conversation after its first answer"},
}}
SEARCH: Schema = {"type": "object", "properties": {
    "results": {"type": "array", "items": {"type": "object", "properties": {
        "conversation": UUID, "title": TEXT, "messageIndex": {"type": "integer", "nullable": True},
        "role": {"type": "string", "enum": ["user", "assistant", "title"]}, "snippet": TEXT}}},
    "nextCursor": {"type": "string", "nullable": True},
    # the inactive branches, which the index does not hold (docs/search.md)
    "unsearched": {"type": "object", "properties": {
        "branches": {"type": "integer", "minimum": 0}, "conversations": {"type": "integer", "minimum": 0}}}}}

COMPONENTS: Schema = {
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "message"], "properties": {"code": TEXT, "message": TEXT}}}},
    "Context": {
        "type": "object", "nullable": True,
        "description": "What the model saw on its latest call: the messages from index sentFrom on, about `tokens` "
                       "of its `budget` (MODEL_CONTEXT - MODEL_RESERVE); null before any call",
        "required": ["sentFrom", "tokens", "budget"],
        "properties": {"sentFrom": {"type": "integer", "minimum": 0}, "tokens": {"type": "integer", "minimum": 0},
                       "budget": {"type": "integer", "minimum": 1}},
    },
    "ConversationSummary": {
        "type": "object", "required": ["id", "title", "createdAt", "updatedAt", "messageCount", "status"],
        "properties": {"id": TEXT, "title": TEXT, "createdAt": TEXT, "updatedAt": TEXT, "messageCount": {"type": "integer"},
                       "status": {"type": "string", "nullable": True}, "error": OBJECT,
                       # organising (issue 48): the flags when set; all of them with `fields=all`
                       "pinned": {"type": "boolean"}, "archived": {"type": "boolean"}, "temporary": {"type": "boolean"},
                       "turns": {"type": "integer", "nullable": True, "description": "its user messages"},
                       "titleBy": {"type": "string", "enum": ["message", "model", "user"]}},
    },
}


async def document(request: Request) -> Response:
    """This table as OpenAPI, with the server's own attachment limits."""
    return JSONResponse(openapi_document(ROUTES, COMPONENTS, request.app.state.services.attachment_limits))


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute("/api/chat", "POST", routes.post_chat,
             "Start a run: a new message, a resume, an edit (editOf) or a regenerate, on a new branch",
             STARTED, body=chat_body, errors=(400, 404, 409, 413, 415, 429, 503)),
    ApiRoute("/api/chat", "GET", routes.get_chat, "Server-sent events of the conversation's active run",
             Answer(schema=TEXT, media="text/event-stream"), params=(
                 Param("conversation", "query", TEXT, required=True),
                 Param("Last-Event-ID", "header", TEXT),
                 Param("follow", "query", {"type": "string", "enum": ["queue"]}, description=(
                     "queue: after a run's terminal event, go on with the run that follows it (a `started` event first)")),
             )),
    ApiRoute("/api/chat/cancel", "POST", routes.cancel_chat, "Cancel the active run",
             body=closed({"conversation": TEXT}, "conversation"), errors=(400, 404, 409, 413)),
    ApiRoute("/api/conversations", "GET", routes.list_conversations, "Conversations, most recently updated first",
             Answer(schema={"type": "object", "properties": {"conversations": {"type": "array", "items": SUMMARY}}}),
             params=(
                 Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}),
                 Param("before", "query", TEXT),
                 Param("q", "query", {"type": "string", "maxLength": 200},
                       description="only conversations whose title contains this text (case-insensitive)"),
                 Param("idPrefix", "query", {"type": "string", "minLength": 4, "maxLength": 36}, description=(
                     "alone: the (at most 11) conversations whose id starts with these 4 to 36 hex digits and dashes")),
                 *presets.LIST_PARAMS,
             ), errors=(400, 500)),
    ApiRoute("/api/conversations/{conversation_id}", "GET", routes.get_conversation, "A conversation with its messages",
             Answer(schema={"type": "object", "properties": {"context": {"$ref": "#/components/schemas/Context"}}}),
             params=(CONVERSATION,), errors=(400, 404, 500)),
    ApiRoute("/api/conversations/{conversation_id}", "PATCH", routes.patch_conversation,
             "Rename (title), choose the model and instructions, pin or archive, and/or switch the active branch "
             "(activeBranch: a branch number)", params=(CONVERSATION,),
             body=closed({"title": {"type": "string", "minLength": 1, "maxLength": 200},
                          "activeBranch": {"type": "integer", "minimum": 1},
                          "model": {"type": "string", "nullable": True, "maxLength": 200},
                          "system": {"type": "string", "nullable": True, "maxLength": 16000},
                          "systemMode": presets.MODE, "pinned": {"type": "boolean"}, "archived": {"type": "boolean"}},
                         minProperties=1),
             errors=(400, 404, 409, 413)),
    ApiRoute("/api/conversations/{conversation_id}", "DELETE", routes.delete_conversation,
             "Delete the conversation, its runs and its checkpoints (a temporary one with a run going answers 202: "
             "it is deleted when the run ends)", NONE, params=(CONVERSATION,), errors=(400, 404, 409)),
    ApiRoute("/api/conversations/{conversation_id}/export", "GET", routes.export_conversation,
             "Markdown transcript; the checkpoint JSONL with format=jsonl; with format=json the whole conversation "
             "(every branch, every message, the approvals' decisions) as POST /api/import reads it",
             Answer(schema=TEXT, media="text/markdown"), params=(CONVERSATION, Param("format", "query", TEXT)),
             errors=(400, 404)),
    ApiRoute("/api/conversations/{conversation_id}/attachments/{digest}", "GET", files.get_attachment,
             "A file a message of the conversation carries, by its SHA-256 (the detail's messages[].attachments[].digest): "
             "images as themselves, text as text/plain, PDF as a download",
             Answer(schema={"type": "string", "format": "binary"}, media="*/*"),
             params=(CONVERSATION, Param("digest", "path", {"type": "string", "pattern": "^[0-9a-f]{64}$"})),
             errors=(400, 404)),
    ApiRoute("/api/conversations/{conversation_id}/fork", "POST", routes.fork_conversation,
             "A new conversation from this one's messages up to messageIndex (its tool results included)",
             Answer(201, {"type": "object", "properties": {"conversation": SUMMARY}}), params=(CONVERSATION,),
             body=closed({"messageIndex": {"type": "integer", "minimum": 0}}, "messageIndex"), errors=(400, 404, 413)),
    ApiRoute("/api/conversations/{conversation_id}/queue/{queued_id}", "PATCH", routes.patch_queued,
             "Edit a queued message while it waits",
             Answer(schema={"type": "object", "properties": {"conversation": UUID, "queued": QUEUED}}),
             params=(CONVERSATION, QUEUED_ID), body=closed({"message": TEXT}, "message"), errors=(400, 404, 413, 503)),
    ApiRoute("/api/conversations/{conversation_id}/queue/{queued_id}", "DELETE", routes.delete_queued,
             "Drop a queued message before it starts", NONE, params=(CONVERSATION, QUEUED_ID), errors=(400, 404, 503)),
    ApiRoute("/api/search", "GET", routes.search,
             "Full-text search over titles and user and assistant messages, best first", Answer(schema=SEARCH), params=(
                 Param("q", "query", {"type": "string", "minLength": 1, "maxLength": 500}, required=True),
                 Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 100}),
                 Param("before", "query", TEXT),
             ), errors=(400, 503)),
    ApiRoute("/api/models", "GET", routes.list_models,
             "The model server's models (Ollama /api/tags and /api/show, OpenAI-compatible /models), kept 10 s; "
             "when the server cannot say, no models and `error`", Answer(schema=MODELS)),
    ApiRoute("/api/export", "GET", transfer.export_all,
             "Every conversation as a zip of their JSON exports (format=json), one file each",
             Answer(schema={"type": "string", "format": "binary"}, media="application/zip"), errors=(503,)),
    ApiRoute("/api/import", "POST", transfer.import_conversations,
             "Import the body: a Sophos JSON export (one conversation or a list), the zip of GET /api/export, or "
             "ChatGPT's conversations.json. Each conversation becomes a new one; a malformed file stores nothing (400)",
             Answer(201, {"type": "object", "properties": {"conversations": {"type": "array", "items": SUMMARY}}}),
             media={"application/json": {}, "application/octet-stream": {"type": "string", "format": "binary"}},
             errors=(400, 408, 413, 501, 503)),
    ApiRoute("/api/approvals/always", "GET", routes.list_allow_rules,
             "The tools always allowed (never asked before they run)",
             Answer(schema={"type": "object", "properties": {"alwaysAllowed": {"type": "array", "items": {
                 "type": "object", "properties": {"tool": TEXT, "since": TEXT}}}}}), errors=(503,)),
    ApiRoute("/api/approvals/always/{tool:path}", "DELETE", routes.revoke_allow_rule,
             'Ask again before the tool runs (a "/" in the name may be sent as is or as %2F)', NONE,
             params=(Param("tool", "path", TEXT),), errors=(400, 404, 503)),
    ApiRoute(session.PATH, "GET", session.get_session,
             "Whether the page needs a login (API_TOKEN set, or users) and has one, and as whom",
             Answer(schema={"type": "object", "properties": {
                 "required": {"type": "boolean"}, "authenticated": {"type": "boolean"},
                 "user": {"type": "object", "description": "who is logged in (when a login is needed and there is "
                                                           "one); the bootstrap admin is `admin`",
                          "properties": {"name": {"type": "string"}, "role": {"type": "string", "enum": ["admin", "user"]}}},
             }})),
    ApiRoute(session.PATH, "POST", session.login,
             "Log the page in: the API token for an HttpOnly, SameSite=Strict session cookie (sophos_session_<port>) "
             "naming a session that ends SESSION_SECONDS later; 429 TOO_MANY_ATTEMPTS (with Retry-After) after 10 "
             "wrong tokens from one address in a minute",
             body=closed({"token": TEXT}, "token"), errors=(400, 401, 403, 413, 429)),
    ApiRoute(session.PATH, "DELETE", session.logout, "Log out: end this browser's session on the server and clear its "
             "cookie", NONE, errors=(403,)),
    ApiRoute(session.EVERYWHERE_PATH, "DELETE", session.logout_everywhere,
             "Log out everywhere: end every login session (every browser must log in again)", NONE,
             errors=(401, 403, 429)),
    *presets.ROUTES,
    ApiRoute("/api/healthz", "GET", routes.healthz, "Liveness"),
    ApiRoute("/api/readyz", "GET", routes.readyz, "Model and tool readiness", errors=(503,)),
    ApiRoute("/api/openapi.json", "GET", document, "This document"),
)
