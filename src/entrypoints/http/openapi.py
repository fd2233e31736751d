"""The OpenAPI 3 document of /api (served at /api/openapi.json; a test keeps it in step
with the real routes and fuzzes the API against it)."""

from __future__ import annotations

from typing import Any

from domain.attachments import DEFAULT_LIMITS, AttachmentLimits, size_text

UUID = {"type": "string", "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"}
ERROR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _responses(ok: int, ok_schema: dict[str, Any] | None, *errors: int, ok_type: str = "application/json") -> dict[str, Any]:
    out: dict[str, Any] = {}
    out[str(ok)] = {"description": "OK"}
    if ok_schema is not None:
        out[str(ok)]["content"] = {ok_type: {"schema": ok_schema}}
    for status in errors:
        out[str(status)] = {"description": "Error", **_json(ERROR)}
    return out


def _started(responses: dict[str, Any]) -> dict[str, Any]:
    """POST /api/chat's 200: JSON, or with `Accept: text/event-stream` the run's events as
    GET /api/chat streams them, its ids in headers."""
    ok = responses["200"]
    ok["content"]["text/event-stream"] = {"schema": {"type": "string"}}
    ok["headers"] = {
        "X-Conversation-Id": {"description": "the conversation (streamed answer only)", "schema": UUID},
        "X-Run-Id": {"description": "the run (streamed answer only)", "schema": {"type": "string"}},
        "X-Queued-Id": {"description": "the queued message (multitask enqueue behind an active run)",
                        "schema": {"type": "string"}},
    }
    return responses


CONV_PARAM = {"name": "conversation_id", "in": "path", "required": True, "schema": {"type": "string"}}
QUEUED_PARAM = {"name": "queued_id", "in": "path", "required": True, "schema": {"type": "string"}}
QUEUED = {"type": "object", "properties": {
    "id": {"type": "string"}, "position": {"type": "integer"}, "text": {"type": "string"}, "createdAt": {"type": "string"}}}


def openapi_document(limits: AttachmentLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The API as this server serves it (`limits`: its attachment settings)."""
    summary = {"$ref": "#/components/schemas/ConversationSummary"}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Sophos API", "version": "1"},
        "paths": {
            "/api/chat": {
                "post": {
                    "summary": "Start a run: a new message, a resume, an edit (editOf) or a regenerate, on a new branch",
                    "requestBody": {"required": True, **_json({
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "message": {"type": "string"},
                            "conversation": {"type": "string"},
                            "resume": {"type": "boolean"},
                            "decision": {"type": "string", "enum": ["retry", "skip"]},
                            "editOf": {"type": "integer", "minimum": 0,
                                       "description": "index of the user message the new message replaces, on a new branch"},
                            "regenerate": {"type": "boolean", "description": "answer the last user message again, on a new branch"},
                            "model": {"type": "string", "nullable": True, "maxLength": 200,
                                      "description": "the conversation's model from this turn on (GET /api/models); "
                                      "null: the server's default; unknown: 400 UNKNOWN_MODEL, nothing stored"},
                            "system": {"type": "string", "nullable": True, "maxLength": 16000,
                                       "description": "the conversation's system prompt from this turn on; null: config/system.md"},
                            "attachments": {"type": "array", "maxItems": limits.max_files, "description":
                                            "files of a new message (also as multipart/form-data: fields message, "
                                            "conversation, model, system and files under `attachments`); at most "
                                            f"{limits.max_files}, {size_text(limits.max_bytes)} each; {limits.shown} "
                                            "(MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES, ATTACHMENT_TYPES)",
                                            "items": {"type": "object", "additionalProperties": False,
                                                      "required": ["name", "data"], "properties": {
                                                          "name": {"type": "string"}, "type": {"type": "string"},
                                                          "data": {"type": "string", "format": "byte"}}}},
                            "multitask": {"type": "string", "enum": ["reject", "enqueue", "interrupt", "rollback"],
                                          "description": "what a new message does while the conversation has an active "
                                                         "or waiting run (default reject: 409)"},
                            "decisions": {"type": "object", "additionalProperties": {
                                "type": "object", "required": ["type"], "additionalProperties": False,
                                "properties": {
                                    "type": {"type": "string", "enum": ["approve", "edit", "reject", "retry", "skip"]},
                                    "args": {"type": "object"},
                                    "message": {"type": "string"},
                                    "always": {"type": "boolean"},
                                }}},
                        },
                    })},
                    "responses": _started(_responses(200, {"type": "object", "properties": {
                        "conversation": UUID, "run": {"type": "string"}, "queued": QUEUED}}, 400, 404, 409, 413, 415, 429, 503)),
                },
                "get": {
                    "summary": "Server-sent events of the conversation's active run",
                    "parameters": [
                        {"name": "conversation", "in": "query", "required": True, "schema": {"type": "string"}},
                        {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "string"}},
                        {"name": "follow", "in": "query", "required": False, "schema": {"type": "string", "enum": ["queue"]},
                         "description": "queue: after a run's terminal event, go on with the run that follows it "
                                        "(a `started` event first)"},
                    ],
                    "responses": _responses(200, {"type": "string"}, ok_type="text/event-stream"),
                },
            },
            "/api/chat/cancel": {
                "post": {
                    "summary": "Cancel the active run",
                    "requestBody": {"required": True, **_json({
                        "type": "object", "additionalProperties": False, "required": ["conversation"],
                        "properties": {"conversation": {"type": "string"}},
                    })},
                    "responses": _responses(200, {"type": "object"}, 400, 404, 409, 413),
                }
            },
            "/api/conversations": {
                "get": {
                    "summary": "Conversations, most recently updated first",
                    "parameters": [
                        {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 500}},
                        {"name": "before", "in": "query", "required": False, "schema": {"type": "string"}},
                        {"name": "q", "in": "query", "required": False, "description":
                         "only conversations whose title contains this text (case-insensitive)",
                         "schema": {"type": "string", "maxLength": 200}},
                        {"name": "idPrefix", "in": "query", "required": False, "description":
                         "alone: the (at most 11) conversations whose id starts with these 4 to 36 hex digits and dashes",
                         "schema": {"type": "string", "minLength": 4, "maxLength": 36}},
                    ],
                    "responses": _responses(200, {"type": "object", "properties": {
                        "conversations": {"type": "array", "items": summary}}}, 400, 500),
                }
            },
            "/api/approvals/always": {
                "get": {
                    "summary": "The tools always allowed (never asked before they run)",
                    "responses": _responses(200, {"type": "object", "properties": {"alwaysAllowed": {
                        "type": "array", "items": {"type": "object", "properties": {
                            "tool": {"type": "string"}, "since": {"type": "string"}}}}}}, 503),
                }
            },
            "/api/approvals/always/{tool}": {
                "delete": {
                    "summary": "Ask again before the tool runs (a \"/\" in the name may be sent as is or as %2F)",
                    "parameters": [{"name": "tool", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": _responses(204, None, 400, 404, 503),
                }
            },
            "/api/search": {
                "get": {
                    "summary": "Full-text search over titles and user and assistant messages, best first",
                    "parameters": [
                        {"name": "q", "in": "query", "required": True, "schema": {"type": "string", "minLength": 1, "maxLength": 500}},
                        {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                        {"name": "before", "in": "query", "required": False, "schema": {"type": "string"}},
                    ],
                    "responses": _responses(200, {"type": "object", "properties": {
                        "results": {"type": "array", "items": {"type": "object", "properties": {
                            "conversation": UUID, "title": {"type": "string"},
                            "messageIndex": {"type": "integer", "nullable": True},
                            "role": {"type": "string", "enum": ["user", "assistant", "title"]},
                            "snippet": {"type": "string"}}}},
                        "nextCursor": {"type": "string", "nullable": True},
                        # the inactive branches, which the index does not hold (docs/search.md)
                        "unsearched": {"type": "object", "properties": {
                            "branches": {"type": "integer", "minimum": 0},
                            "conversations": {"type": "integer", "minimum": 0}}}}}, 400, 503),
                }
            },
            "/api/conversations/{conversation_id}": {
                "get": {
                    "summary": "A conversation with its messages",
                    "parameters": [CONV_PARAM],
                    "responses": _responses(200, {"type": "object", "properties": {
                        "context": {"$ref": "#/components/schemas/Context"}}}, 400, 404, 500),
                },
                "patch": {
                    "summary": "Rename (title) and/or switch the active branch (activeBranch: a branch number)",
                    "parameters": [CONV_PARAM],
                    "requestBody": {"required": True, **_json({
                        "type": "object", "additionalProperties": False, "minProperties": 1,
                        "properties": {"title": {"type": "string", "minLength": 1, "maxLength": 200},
                                       "activeBranch": {"type": "integer", "minimum": 1},
                                       "model": {"type": "string", "nullable": True, "maxLength": 200},
                                       "system": {"type": "string", "nullable": True, "maxLength": 16000}},
                    })},
                    "responses": _responses(200, {"type": "object"}, 400, 404, 409, 413),
                },
                "delete": {
                    "summary": "Delete the conversation, its runs and its checkpoints",
                    "parameters": [CONV_PARAM],
                    "responses": _responses(204, None, 400, 404, 409),
                },
            },
            "/api/conversations/{conversation_id}/fork": {
                "post": {
                    "summary": "A new conversation from this one's messages up to messageIndex (its tool results included)",
                    "parameters": [CONV_PARAM],
                    "requestBody": {"required": True, **_json({
                        "type": "object", "additionalProperties": False, "required": ["messageIndex"],
                        "properties": {"messageIndex": {"type": "integer", "minimum": 0}},
                    })},
                    "responses": _responses(201, {"type": "object", "properties": {
                        "conversation": {"$ref": "#/components/schemas/ConversationSummary"}}}, 400, 404, 413),
                }
            },
            "/api/conversations/{conversation_id}/queue/{queued_id}": {
                "patch": {
                    "summary": "Edit a queued message while it waits",
                    "parameters": [CONV_PARAM, QUEUED_PARAM],
                    "requestBody": {"required": True, **_json({
                        "type": "object", "additionalProperties": False, "required": ["message"],
                        "properties": {"message": {"type": "string"}},
                    })},
                    "responses": _responses(200, {"type": "object", "properties": {
                        "conversation": UUID, "queued": QUEUED}}, 400, 404, 413, 503),
                },
                "delete": {
                    "summary": "Drop a queued message before it starts",
                    "parameters": [CONV_PARAM, QUEUED_PARAM],
                    "responses": _responses(204, None, 400, 404, 503),
                },
            },
            "/api/conversations/{conversation_id}/export": {
                "get": {
                    "summary": "Markdown transcript; the checkpoint JSONL with format=jsonl; with format=json the whole "
                               "conversation (every branch, every message, the approvals' decisions) as POST /api/import reads it",
                    "parameters": [CONV_PARAM, {"name": "format", "in": "query", "required": False, "schema": {"type": "string"}}],
                    "responses": _responses(200, {"type": "string"}, 400, 404, ok_type="text/markdown"),
                }
            },
            "/api/conversations/{conversation_id}/attachments/{digest}": {
                "get": {
                    "summary": "A file a message of the conversation carries, by its SHA-256 (the detail's "
                               "messages[].attachments[].digest): images as themselves, text as text/plain, PDF as a download",
                    "parameters": [CONV_PARAM, {"name": "digest", "in": "path", "required": True,
                                                "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}],
                    "responses": _responses(200, {"type": "string", "format": "binary"}, 400, 404,
                                            ok_type="*/*"),
                }
            },
            "/api/export": {
                "get": {
                    "summary": "Every conversation as a zip of their JSON exports (format=json), one file each",
                    "responses": _responses(200, {"type": "string", "format": "binary"}, 503, ok_type="application/zip"),
                }
            },
            "/api/import": {
                "post": {
                    "summary": "Import the body: a Sophos JSON export (one conversation or a list), the zip of "
                               "GET /api/export, or ChatGPT's conversations.json. Each conversation becomes a new one; "
                               "a malformed file stores nothing (400)",
                    "requestBody": {"required": True, "content": {
                        "application/json": {"schema": {}},
                        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                    }},
                    "responses": _responses(201, {"type": "object", "properties": {
                        "conversations": {"type": "array", "items": summary}}}, 400, 408, 413, 501, 503),
                }
            },
            "/api/session": {
                "get": {
                    "summary": "Whether the page needs a login (API_TOKEN set) and has one",
                    "responses": _responses(200, {"type": "object", "properties": {
                        "required": {"type": "boolean"}, "authenticated": {"type": "boolean"}}}),
                },
                "post": {
                    "summary": "Log the page in: the API token for an HttpOnly, SameSite=Strict session cookie "
                               "(sophos_session_<port>) naming a session that ends SESSION_SECONDS later; 429 "
                               "TOO_MANY_ATTEMPTS (with Retry-After) after 10 wrong tokens from one address in a minute",
                    "requestBody": {"required": True, **_json({
                        "type": "object", "additionalProperties": False, "required": ["token"],
                        "properties": {"token": {"type": "string"}},
                    })},
                    "responses": _responses(200, {"type": "object"}, 400, 401, 403, 413, 429),
                },
                "delete": {"summary": "Log out: end this browser's session on the server and clear its cookie",
                           "responses": _responses(204, None, 403)},
            },
            "/api/session/all": {
                "delete": {"summary": "Log out everywhere: end every login session (every browser must log in again)",
                           "responses": _responses(204, None, 401, 403, 429)},
            },
            "/api/models": {
                "get": {
                    "summary": "The model server's models (Ollama /api/tags and /api/show, OpenAI-compatible /models), "
                               "kept 10 s; when the server cannot say, no models and `error`",
                    "responses": _responses(200, {"type": "object", "required": ["default", "models"], "properties": {
                        "default": {"type": "string"},
                        "models": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
                            "name": {"type": "string"}, "size": {"type": "integer", "nullable": True},
                            "context": {"type": "integer", "nullable": True},
                            "capabilities": {"type": "array", "items": {"type": "string"}},
                            "family": {"type": "string", "nullable": True}, "default": {"type": "boolean"}}}},
                        "error": {"type": "object"},
                        "attachments": {"type": "object", "description": "what a message may carry here",
                                        "properties": {"maxBytes": {"type": "integer"}, "maxFiles": {"type": "integer"},
                                                       "types": {"type": "array", "items": {"type": "string"}},
                                                       "shown": {"type": "string"}}},
                    }}),
                }
            },
            "/api/healthz": {"get": {"summary": "Liveness", "responses": _responses(200, {"type": "object"})}},
            "/api/readyz": {"get": {"summary": "Model and tool readiness", "responses": _responses(200, {"type": "object"}, 503)}},
            "/api/openapi.json": {"get": {"summary": "This document", "responses": _responses(200, {"type": "object"})}},
        },
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
                        "code": {"type": "string"}, "message": {"type": "string"}}}},
                },
                "Context": {
                    "type": "object",
                    "nullable": True,
                    "description": "What the model saw on its latest call: the messages from index sentFrom on, "
                    "about `tokens` of its `budget` (MODEL_CONTEXT - MODEL_RESERVE); null before any call",
                    "required": ["sentFrom", "tokens", "budget"],
                    "properties": {
                        "sentFrom": {"type": "integer", "minimum": 0},
                        "tokens": {"type": "integer", "minimum": 0},
                        "budget": {"type": "integer", "minimum": 1},
                    },
                },
                "ConversationSummary": {
                    "type": "object",
                    "required": ["id", "title", "createdAt", "updatedAt", "messageCount", "status"],
                    "properties": {
                        "id": {"type": "string"}, "title": {"type": "string"},
                        "createdAt": {"type": "string"}, "updatedAt": {"type": "string"},
                        "messageCount": {"type": "integer"},
                        "status": {"type": "string", "nullable": True},
                        "error": {"type": "object"},
                    },
                },
            }
        },
    }
