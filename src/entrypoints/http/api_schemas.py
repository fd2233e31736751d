"""The shapes the /api route table (entrypoints/http/api.py) names: request bodies,
answers and the OpenAPI document's shared components."""

from __future__ import annotations

from domain.attachments import AttachmentLimits, size_text
from entrypoints.http import presets
from entrypoints.http.openapi import Answer, Param, Schema

UUID: Schema = {
    "type": "string",
    "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$",
}
TEXT: Schema = {"type": "string"}
OBJECT: Schema = {"type": "object"}
SUMMARY: Schema = {"$ref": "#/components/schemas/ConversationSummary"}
QUEUED: Schema = {"type": "object", "properties": {"id": TEXT, "position": {"type": "integer"}, "text": TEXT, "createdAt": TEXT}}
CONVERSATION = Param("conversation_id", "path", TEXT)
QUEUED_ID = Param("queued_id", "path", TEXT)
NONE = Answer(204)


def closed(properties: Schema, *required: str, **more: object) -> Schema:
    """A JSON object with these properties only."""
    schema: Schema = {
        "type": "object",
        "additionalProperties": False,
        **({"required": list(required)} if required else {}),
        **more,
        "properties": properties,
    }
    return schema


WEBHOOK: Schema = {
    "type": "string",
    "maxLength": 2000,
    "description": "a URL called with the run's outcome when it ends, signed (docs/schedules.md#webhooks); "
    "400 WEBHOOK_NOT_ALLOWED for an address WEBHOOK_ALLOWED_HOSTS does not allow",
}


DECISION = closed(
    {
        "type": {"type": "string", "enum": ["approve", "edit", "reject", "retry", "skip"]},
        "args": OBJECT,
        "message": TEXT,
        "always": {"type": "boolean"},
    },
    "type",
)


def chat_body(limits: AttachmentLimits) -> Schema:
    """POST /api/chat's body, with this server's attachment limits."""
    attachments = {
        "type": "array",
        "maxItems": limits.max_files,
        "description": "files of a new message (also as multipart/form-data: fields message, conversation, model, "
        f"system and files under `attachments`); at most {limits.max_files}, "
        f"{size_text(limits.max_bytes)} each; {limits.shown} (MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES, "
        "ATTACHMENT_TYPES)",
        "items": closed({"name": TEXT, "type": TEXT, "data": {"type": "string", "format": "byte"}}, "name", "data"),
    }
    return closed(
        {
            "message": TEXT,
            "conversation": TEXT,
            "resume": {"type": "boolean"},
            "decision": {"type": "string", "enum": ["retry", "skip"]},
            "editOf": {
                "type": "integer",
                "minimum": 0,
                "description": "index of the user message the new message replaces, on a new branch",
            },
            "regenerate": {"type": "boolean", "description": "answer the last user message again, on a new branch"},
            "model": {
                "type": "string",
                "nullable": True,
                "maxLength": 200,
                "description": "the conversation's model from this turn on (GET /api/models); null: the server's "
                "default; unknown: 400 UNKNOWN_MODEL, nothing stored",
            },
            "system": {
                "type": "string",
                "nullable": True,
                "maxLength": 16000,
                "description": "the conversation's instructions from this turn on; null: config/system.md alone",
            },
            "systemMode": presets.MODE,
            "temporary": {
                "type": "boolean",
                "description": "a new conversation that is not kept: never listed nor searched, deleted once its page leaves it",
            },
            "attachments": attachments,
            "webhook": WEBHOOK,
            "multitask": {
                "type": "string",
                "enum": ["reject", "enqueue", "interrupt", "rollback"],
                "description": "what a new message does while the conversation has an active or waiting run "
                "(default reject: 409)",
            },
            "decisions": {"type": "object", "additionalProperties": DECISION},
        }
    )


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
MODELS: Schema = {
    "type": "object",
    "required": ["default", "models"],
    "properties": {
        "default": TEXT,
        "models": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": TEXT,
                    "size": {"type": "integer", "nullable": True},
                    "context": {"type": "integer", "nullable": True},
                    "capabilities": {"type": "array", "items": TEXT},
                    "family": {"type": "string", "nullable": True},
                    "default": {"type": "boolean"},
                },
            },
        },
        "error": OBJECT,
        "attachments": {
            "type": "object",
            "description": "what a message may carry here",
            "properties": {
                "maxBytes": {"type": "integer"},
                "maxFiles": {"type": "integer"},
                "types": {"type": "array", "items": TEXT},
                "shown": TEXT,
            },
        },
        "autoTitle": {"type": "boolean", "description": "AUTO_TITLE: the model titles a conversation after its first answer"},
    },
}
SEARCH: Schema = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "conversation": UUID,
                    "title": TEXT,
                    "messageIndex": {"type": "integer", "nullable": True},
                    "role": {"type": "string", "enum": ["user", "assistant", "title"]},
                    "snippet": TEXT,
                },
            },
        },
        "nextCursor": {"type": "string", "nullable": True},
        # the inactive branches, which the index does not hold (docs/search.md)
        "unsearched": {
            "type": "object",
            "properties": {"branches": {"type": "integer", "minimum": 0}, "conversations": {"type": "integer", "minimum": 0}},
        },
    },
}

COMPONENTS: Schema = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {"type": "object", "required": ["code", "message"], "properties": {"code": TEXT, "message": TEXT}}
        },
    },
    "Context": {
        "type": "object",
        "nullable": True,
        "description": "What the model saw on its latest call: the messages from index sentFrom on, about `tokens` "
        "of its `budget` (MODEL_CONTEXT - MODEL_RESERVE); null before any call",
        "required": ["sentFrom", "tokens", "budget"],
        "properties": {
            "sentFrom": {"type": "integer", "minimum": 0},
            "tokens": {"type": "integer", "minimum": 0},
            "budget": {"type": "integer", "minimum": 1},
            "searched": {
                "type": "array",
                "items": TEXT,
                "description": "files too long to send whole: the passages that best match the message were sent",
            },
        },
    },
    "ConversationSummary": {
        "type": "object",
        "required": ["id", "title", "createdAt", "updatedAt", "messageCount", "status"],
        "properties": {
            "id": TEXT,
            "title": TEXT,
            "createdAt": TEXT,
            "updatedAt": TEXT,
            "messageCount": {"type": "integer"},
            "status": {"type": "string", "nullable": True},
            "error": OBJECT,
            # organising (issue 48): the flags when set; all of them with `fields=all`
            "pinned": {"type": "boolean"},
            "archived": {"type": "boolean"},
            "temporary": {"type": "boolean"},
            "turns": {"type": "integer", "nullable": True, "description": "its user messages"},
            "titleBy": {"type": "string", "enum": ["message", "model", "user"]},
        },
    },
}

# GET /api/usage and GET /api/audit (entrypoints/http/usage.py)
NUMBER: Schema = {"type": "number"}
INTEGER: Schema = {"type": "integer"}
USAGE_ROWS: Schema = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "user": {"type": "string", "description": "the user's name"},
                    "userId": TEXT,
                    "model": TEXT,
                    "day": {"type": "string", "format": "date"},
                    "inputTokens": INTEGER,
                    "outputTokens": INTEGER,
                    "modelSeconds": NUMBER,
                    "toolSeconds": NUMBER,
                    "calls": INTEGER,
                    "estimated": {"type": "boolean", "description": "some calls' tokens were estimated: the server gave none"},
                    "estimatedCalls": INTEGER,
                },
            },
        }
    },
}
AUDIT_ROWS: Schema = {
    "type": "object",
    "properties": {
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "seq": INTEGER,
                    "at": TEXT,
                    "actor": TEXT,
                    "action": TEXT,
                    "origin": {"type": "string", "description": "the client's address, or cli:<os user>"},
                    "target": TEXT,
                    "detail": TEXT,
                },
            },
        }
    },
}

# /api/schedules (entrypoints/http/schedules.py)
WHEN: Schema = {"type": "string", "format": "date-time", "maxLength": 40}
SCHEDULE_FIELDS: Schema = {
    "cron": {
        "type": "string",
        "maxLength": 120,
        "description": "5 fields (minute hour day month weekday), or 6 with seconds first; or give `at`",
    },
    "at": {**WHEN, "description": "once, at this time (with an offset); or give `cron`"},
    "tz": {"type": "string", "maxLength": 64, "description": "the IANA time zone the cron is read in (default UTC)"},
    "message": {"type": "string", "minLength": 1, "maxLength": 16000},
    "catchUp": {
        "type": "string",
        "enum": ["once", "skip"],
        "description": "firings missed while no process ran: run once (the latest) at start-up, or skip them",
    },
    "endsAt": {**WHEN, "nullable": True, "description": "no firing after this time"},
    "enabled": {"type": "boolean", "description": "false: paused"},
    "webhook": {
        "type": "string",
        "nullable": True,
        "maxLength": 2000,
        "description": "called with each firing's outcome when its run ends (docs/schedules.md#webhooks); null: none",
    },
}
SCHEDULE: Schema = {
    "type": "object",
    "properties": {
        "id": UUID,
        **SCHEDULE_FIELDS,
        "message": {"type": "string", "maxLength": 16000, "description": "empty for a hosted graph's schedule (graphId)"},
        "conversationId": {**UUID, "nullable": True, "description": "null: a new conversation per firing"},
        "graphId": {
            "type": "string",
            "nullable": True,
            "description": "a LangGraph cron's hosted graph, run with its own input (null: Sophos's agent gets message)",
        },
        "webhook": {"type": "string", "nullable": True, "description": "the URL told when a firing's run ends"},
        "nextAt": {**WHEN, "nullable": True},
        "createdAt": WHEN,
        "lastRunId": {"type": "string", "nullable": True},
        "lastFiredFor": {**WHEN, "nullable": True},
        "lastRun": {
            "type": "object",
            "nullable": True,
            "description": "the outcome of the run it last started (null: none yet, or its message still queued)",
            "properties": {
                "id": TEXT,
                "conversationId": UUID,
                "status": {"type": "string", "enum": ["running", "completed", "failed", "interrupted", "cancelled", "waiting"]},
                "finishedAt": {**WHEN, "nullable": True},
                "error": {"type": "object", "nullable": True, "properties": {"code": TEXT, "message": TEXT}},
            },
        },
    },
}
FIRING: Schema = {
    "type": "object",
    "properties": {
        "scheduledFor": WHEN,
        "runId": TEXT,
        "conversationId": UUID,
        "queued": {"type": "boolean", "description": "queued behind a run going (its run takes runId when it starts)"},
        "redo": {"type": "boolean", "description": "its run stopped before its message was saved: it starts again"},
    },
}
