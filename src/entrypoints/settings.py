"""Settings: one typed, frozen object, read from the environment over `<CONFIG_DIR>/defaults.yaml`
(which holds only what an installation changes) over the declared defaults. An empty
environment variable counts as unset.

`Settings` is the table: each field is one declaration, `setting(default, doc, rules...)`,
with its type as the annotation (entrypoints/settings_rules.py). The checks, the errors and
the settings table of docs/configuration.md all come from it; a setting is added with one
declaration (and, if it depends on another, a rule in CROSS_CHECKS, entrypoints/settings_checks.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from domain.attachments import (
    ATTACHMENT_BYTES_CEILING,
    ATTACHMENTS_CEILING,
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    MAX_IMAGE_PIXELS,
    PIXELS_CEILING,
    AttachmentLimits,
    attachment_types,
    size_text,
)
from domain.webhooks import AllowedHosts
from entrypoints.settings_checks import CROSS_CHECKS, attachment_types_ok, database_label, defaults_file, postgres_url
from entrypoints.settings_rules import SettingsError, declarations, merged, read, setting

__all__ = ["MAX_ANSWER_TOKENS", "Settings", "SettingsError", "database_label", "load_settings"]

MIN_CONTEXT = 512
# the widest window local models serve; LangChain holds every streamed chunk of an answer
# until it ends (~2.3 KiB a token), so this also bounds what one answer can cost (~300 MiB)
MAX_ANSWER_TOKENS = 131_072
MAX_TOOL_TIMEOUT = 86_400
MAX_SESSION_SECONDS = 400 * 86_400  # browsers cap a cookie's Max-Age at 400 days


@dataclass(frozen=True)
class Settings:
    """Every setting, typed, with its default: the one place defaults are written. The
    names are the environment variables'; each doc line is the docs table's Meaning."""

    DATABASE_PATH: str = setting("data/db/sophos.db", "the SQLite file (its directory is created)")
    CONFIG_DIR: str = setting("config", "holds `system.md`, `mcp.json`, `defaults.yaml`", env_only=True)
    MEMORY_FILE_PATH: str = setting(
        "data/memory/memory.jsonl",
        "the Memory server's file; replaces `${MEMORY_FILE_PATH}` in `mcp.json`",
    )
    MEMORY_BACKEND: str = setting(
        "store",
        "who serves `mcp.json`'s `memory` entry: `store`, Sophos's own memory tools (`memory__remember`, "
        "`memory__recall`, `memory__forget`), each user's memories their own, in the database; `mcp-file`, the "
        "Memory MCP server, one file (`MEMORY_FILE_PATH`) shared by everyone: for a one-person server (docs/memory.md)",
        choices=("store", "mcp-file"),
    )
    MODEL_BACKEND: str = setting(
        "ollama",
        "`ollama`, `openai` (any OpenAI-compatible server) or `demo` (offline)",
        choices=("ollama", "openai", "demo"),
    )
    TOOLS_BACKEND: str = setting(
        "mcp",
        "`mcp` (servers of `mcp.json`), `demo` (two built-in tools) or `none`",
        choices=("mcp", "demo", "none"),
    )
    OLLAMA_HOST: str = setting("http://localhost:11434", "Ollama server")
    OLLAMA_MODEL: str = setting("qwen3", "model name; readiness matches it as a substring")
    OLLAMA_THINK: str = setting(
        "auto",
        "`auto`: ask a model to think where Ollama's `/api/show` lists the `thinking` capability (not "
        "asked when it lists none; left to the server when it says nothing); `true` / `false`: always / "
        "never. The thinking streams as `reasoning` events and is stored with the answer ([api](api.md))",
        choices=("auto", "true", "false"),
    )
    OPENAI_BASE_URL: str = setting(
        "http://localhost:8080/v1",
        "OpenAI-compatible server (llama.cpp, vLLM, LM Studio)",
    )
    OPENAI_MODEL: str = setting("local-model", "its model name")
    OPENAI_API_KEY: str = setting("", "its key, if it wants one")
    EMBEDDING_MODEL: str = setting(
        "",
        "the embedding model, on the chat model's server (`MODEL_BACKEND`: Ollama's `/api/embed` at "
        "`OLLAMA_HOST`, or `/embeddings` at `OPENAI_BASE_URL` with `OPENAI_API_KEY`): the store's search "
        "ranks by meaning and words together (hybrid); unset, by words alone ([memory](memory.md#search))",
        shown="(unset)",
    )
    MODEL_TIMEOUT: int = setting(
        120,
        "seconds; a model server that stalls longer fails the run with `MODEL_UNREACHABLE`",
    )
    MODEL_TRANSPORT: str = setting(
        "auto",
        "how model calls reach the server: `fast` (Sophos's httptools transport), `httpx` (httpx's own, "
        "with the proxy `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` name unless `NO_PROXY` exempts the host), "
        "`auto` (httpx's when such a proxy applies, else fast); TLS is verified with httpx's CAs "
        "(certifi, or `SSL_CERT_FILE`/`SSL_CERT_DIR`), for the readiness check too",
        choices=("auto", "fast", "httpx"),
    )
    MODEL_TOOL_CHOICE: str = setting(
        "",
        "`auto`, `required` or `none`: sent as `tool_choice` to an OpenAI-compatible server "
        "(llama-cpp-python's function-calling formats ignore tools without it); on Ollama, whose API has "
        "none, `none` sends no tools and `required` is not sent. Unset: not sent. `required` makes every "
        "call call a tool, so a run goes on until `AGENT_RECURSION_LIMIT`. See [the tool-calling "
        "table](model.md#tool-calling)",
        choices=("", "auto", "required", "none"),
        shown="(unset)",
    )
    MODEL_CONTEXT: int = setting(
        8192,
        "tokens the model reads: sent to Ollama as `num_ctx`; with `MODEL_RESERVE`, the budget of every "
        "prompt (see [the context budget](context.md))",
        low=MIN_CONTEXT,
        unit="tokens",
    )
    MODEL_RESERVE: int = setting(
        1024,
        "tokens of `MODEL_CONTEXT` kept for the answer (at most half of it; unless set in the "
        "environment, it shrinks to half of a small `MODEL_CONTEXT`, so `MODEL_CONTEXT=1024` alone "
        "starts)",
        low=0,
        said="between 0 and half of MODEL_CONTEXT",
    )
    MODEL_MAX_TOKENS: int = setting(
        0,
        "tokens one answer may have, thinking included (1 to 131,072; `0`: half of `MODEL_CONTEXT`, and "
        "never less than `MODEL_RESERVE`). A model in a loop stops there instead of filling the server's "
        "window; the reserve alone (1,024) would cut a thinking model's answers and long programs. Sent "
        "to the server (Ollama `num_predict`, OpenAI-compatible `max_tokens`) and enforced while "
        "streaming; an answer that reaches it is stopped there, its text kept, and the run fails "
        "`ANSWER_TOO_LONG` (see [hardening](hardening.md))",
        low=0,
        high=MAX_ANSWER_TOKENS,
        said=f"between 1 and {MAX_ANSWER_TOKENS} tokens, or 0 (half of MODEL_CONTEXT)",
        shown="`0` (= half of `MODEL_CONTEXT`)",
    )
    CONTEXT_SUMMARY: bool = setting(
        False,
        "`true`: messages that no longer fit are summarized once by the model and the summary is stored "
        "in the thread; otherwise they are left out",
    )
    CONTEXT_TOOL_SHARE: float = setting(
        0.25,
        "a tool result larger than this share of the budget is sent shortened (head and tail); the thread keeps it whole",
        low=0.05,
        high=1,
    )
    AGENT_RECURSION_LIMIT: int = setting(
        25,
        "steps per run (an agent → tools round trip is 2); invalid values mean 25",
        low=1,
        fallback=True,
    )
    RUN_LEASE_SECONDS: float = setting(
        30,
        "the owner renews its runs' lease every third of this; a run whose lease is older (by the "
        "database's clock) may be taken over",
    )
    HOST: str = setting(
        "127.0.0.1",
        "listen address; a non-loopback address requires `API_TOKEN` (or `AUTH=proxy`)",
    )
    PORT: int = setting(8000, "listen port")
    SHUTDOWN_TIMEOUT: int = setting(30, "seconds runs may take to finish after SIGTERM/SIGINT")
    API_TOKEN: str = setting(
        "",
        "when set, every `/api` route but `healthz` and `session`, and `/metrics`, needs `Authorization: "
        "Bearer <token>` (any case of `Bearer`) or the page's login cookie",
    )
    SESSION_SECONDS: float = setting(
        30 * 24 * 3600,
        "seconds a page login lasts, from the login (30 days; use does not extend it; 1 to 34,560,000, "
        "400 days); log-out ends it at once (see [security](security.md#the-page-and-api_token))",
        low=1,
        high=MAX_SESSION_SECONDS,
        said=f"between 1 and {MAX_SESSION_SECONDS} (400 days)",
    )
    AUTH: str = setting(
        "token",
        "`token`: `API_TOKEN` (the bootstrap admin) and users' tokens (`sophos users`); `proxy`: also a "
        "trusted proxy's user header ([users](users.md#single-sign-on-through-a-proxy-authproxy))",
        choices=("token", "proxy"),
    )
    TRUSTED_PROXY_IPS: str = setting(
        "",
        "the reverse proxies in front of Sophos: addresses or networks, comma-separated (`127.0.0.1`, "
        "`10.1.0.0/16`). Only from these peers are `X-Forwarded-For` (the client's address, which the "
        "failed-login limit counts), `X-Forwarded-Proto` (https at the proxy) and, with `AUTH=proxy` (where "
        "it is required), the user header believed; from any other peer they are ignored. Empty: no proxy "
        "is believed ([security](security.md#behind-a-reverse-proxy))",
    )
    PROXY_USER_HEADER: str = setting(
        "Remote-User",
        "`AUTH=proxy`: the header naming the user (`X-Forwarded-User`, `X-Forwarded-Email`, …)",
    )
    PROXY_AUTO_CREATE: bool = setting(
        True,
        "`AUTH=proxy`: a user first seen is created with role `user`; `false` refuses them until `sophos users add`",
    )
    ADMIN_SEES_ALL: bool = setting(
        False,
        "`true`: admins reach every user's conversations (otherwise only their own)",
    )
    USER_MAX_ACTIVE_RUNS: int = setting(
        0,
        "a user's running runs plus queued messages at most; beyond it 429 `USER_LIMIT` (0: no limit; the"
        " bootstrap admin is not limited)",
        low=0,
        said="0 (no limit) or a number of runs",
    )
    USER_DAILY_TOKENS: int = setting(
        0, "tokens in and out a user's model calls may use per UTC day; beyond it 429 `QUOTA_EXCEEDED` (0: no quota)", low=0
    )
    ALLOWED_HOSTS: str = setting(
        "",
        "host names served besides `localhost`, IP addresses and `HOST`, comma-separated; `.example.com` "
        "means that domain and its subdomains; ports ignored (see [security: host "
        "checking](security.md#host-checking))",
    )
    LOG_LEVEL: str = setting("INFO", "server log level")
    SSE_PING_SECONDS: float = setting(15, "keep-alive `ping` interval on event streams")
    AUTO_RESUME: bool = setting(
        False,
        "`true`: the server resumes interrupted runs (those needing no decision) at start-up and, while "
        "it runs, those whose owner died",
    )
    AUTO_TITLE: bool = setting(
        True,
        "after a conversation's first answer the model writes its title, off the run's "
        "critical path (the request is in [the model](model.md#the-title-of-a-conversation)); "
        "`false`: the first message's line stays",
    )
    CHECKPOINT_KEEP: int = setting(
        3,
        "full checkpoints kept per thread; older ones are deleted as new ones are written (`0` keeps all,"
        " as plain LangGraph does). The export history keeps every checkpoint",
    )
    RUN_EVENT_RETENTION_SECONDS: float = setting(
        300,
        "how long a finished run's events stay in the database for late or cross-process followers",
    )
    AUDIT_RETENTION_DAYS: int = setting(
        365, "days the audit log keeps a row; older rows are deleted by the server's maintenance (0: kept for ever)", low=0
    )
    DATABASE_BUSY_TIMEOUT: float = setting(
        5,
        "seconds a write waits for another process's write lock (on PostgreSQL: for a pooled connection "
        "or a database that is down) before answering 503 `STORAGE_FAILURE`",
    )
    DATABASE_URL: str = setting(
        "",
        "`postgresql://user:pass@host:5432/db`: PostgreSQL holds everything instead of the SQLite file, "
        "for every command; several processes may share it (see [operations](operations.md))",
        check=postgres_url,
        said="empty, or a `postgresql://` (or `postgres://`) URL",
    )
    STORAGE_BACKEND: str = setting(
        "",
        "`sqlite` (the file at `DATABASE_PATH`), `postgres` (needs `DATABASE_URL`) or `memory` (nothing "
        "kept after the process exits: tests, trying things out). Unset: `postgres` when `DATABASE_URL` "
        "is set, else `sqlite`, as before the setting existed; `sqlite` with a `DATABASE_URL` set uses "
        "the file and ignores the URL",
        choices=("", "sqlite", "postgres", "memory"),
        shown="(derived)",
    )
    DATABASE_POOL_SIZE: int = setting(
        10,
        "PostgreSQL connections per process at most (plus one held for liveness and notifications)",
        low=1,
    )
    MCP_START_TIMEOUT: float = setting(
        30,
        "seconds one attempt to start an MCP server (spawn, initialize, list tools) may take; a server "
        "that fails is retried in the background",
    )
    TOOL_TIMEOUT: float = setting(
        120,
        'seconds a tool call may take (an entry\'s `"timeout"` in `mcp.json` sets its own); a call unsafe '
        "to repeat that outlives it is an unknown outcome (`TOOL_OUTCOME_UNKNOWN`), a safe one a failure "
        "the model sees",
        above=0,
        high=MAX_TOOL_TIMEOUT,
    )
    TOOL_APPROVAL: str = setting(
        "unsafe",
        "which tool calls wait for a person's approval: `unsafe` (destructive, not idempotent, not "
        "read-only), `all` or `off`; `mcp.json` may add `approve`/`autoApprove` globs per server (see "
        "[Asking before acting](approvals.md))",
        choices=("off", "unsafe", "all"),
    )
    APPROVAL_TIMEOUT: float = setting(
        0,
        "seconds after which an unanswered approval is rejected by the server and the conversation continues; `0` waits for ever",
        low=0,
        said="0 (off) or a number of seconds",
    )
    REQUEST_TIMEOUT: float = setting(
        10,
        "seconds a client may take to send a request's line and headers (else the connection is closed), "
        "and again its body (else 408 `REQUEST_TIMEOUT`)",
    )
    MAX_CONNECTIONS: int = setting(
        100,
        "open connections served at once, event streams included; beyond it, 503 at once",
    )
    LANGGRAPH_API_PORT: int = setting(
        2024,
        "port of LangGraph's Agent Server API, served by `sophos serve` beside the main one on `HOST` "
        "(the SDKs and Agent Chat UI; see [the LangGraph API](langgraph-api.md)); `0` turns it off. Unset "
        "(or left at 2024 in `defaults.yaml`) and taken by another program (`langgraph dev` uses 2024 too): "
        "one warning naming the port and this setting, and the page and `/api` are served without it; set "
        "in the environment (or to another port) and taken: `serve` refuses to start (`ADDRESS_IN_USE`, "
        "exit 6)",
        low=0,
        high=65535,
        said="a port (1-65535) or 0 (off)",
    )
    LANGGRAPH_API_CORS_ORIGINS: str = setting(
        "",
        "browser origins allowed to call the LangGraph API (comma-separated, e.g. `http://localhost:3000`"
        " for Agent Chat UI, or `*`); others' cross-origin writes get 403. Needs a login: `sophos serve` "
        "refuses it (exit code 2) while no `API_TOKEN`, user or `AUTH=proxy` is set, and a request from "
        "another origin needs a token it sends itself (401 without) "
        "([security](security.md#the-langgraph-api-and-cors))",
    )
    LANGGRAPH_JSON: str = setting(
        "",
        "a `langgraph.json` (langgraph-cli's format) whose graphs `sophos serve` imports at start-up, "
        "stopping with one line naming the file and the error when one fails (`--langgraph-json PATH`; "
        "`sophos graphs` lists them); the LangGraph API serves each as an assistant, its runs durable as "
        "Sophos's own: see [Your own graphs](langgraph-api.md#your-own-graphs)",
    )
    MAX_QUEUED: int = setting(
        20,
        'messages that may wait in one conversation\'s queue (`multitask: "enqueue"`, [api](api.md)); '
        "beyond it, 429 `QUEUE_FULL` (1 to 1000)",
        low=1,
        high=1000,
    )
    MAX_ATTACHMENT_BYTES: int = setting(
        MAX_ATTACHMENT_BYTES,
        "one attached file at most, in bytes (10 MB; 1 to 67,108,864, 64 MB); beyond it, 413 "
        "`ATTACHMENT_TOO_LARGE`. A chat body may hold every file at once, base64-encoded, so the request "
        "limit follows: `MAX_ATTACHMENTS` × 4/3 × this",
        low=1,
        high=ATTACHMENT_BYTES_CEILING,
        said=f"between 1 and {ATTACHMENT_BYTES_CEILING} ({size_text(ATTACHMENT_BYTES_CEILING)})",
    )
    MAX_ATTACHMENTS: int = setting(
        MAX_ATTACHMENTS,
        "files one message may carry (0 to 32); beyond it, 400 `TOO_MANY_ATTACHMENTS`; `0` turns "
        "attachments off (the page hides its attach button)",
        low=0,
        high=ATTACHMENTS_CEILING,
        said=f"between 0 (off) and {ATTACHMENTS_CEILING}",
    )
    ATTACHMENT_TYPES: str = setting(
        "text,image,pdf",
        "what a message may carry, comma-separated: the kinds `text` (plain text, code, Markdown, CSV, "
        "JSON, YAML…), `image` (PNG, JPEG, GIF, WebP), `pdf`; `text/*` and `image/*`; or single media "
        "types Sophos reads (`text/markdown`, `image/png`, …). A type Sophos cannot read (SVG, a binary) "
        "cannot be let in; another is 415 `ATTACHMENT_TYPE_NOT_ALLOWED`. Imports read back any file a "
        "Sophos could have stored",
        check=attachment_types_ok,
        said="comma-separated kinds (`text`, `image`, `pdf`) or media types",
    )
    MAX_IMAGE_PIXELS: int = setting(
        MAX_IMAGE_PIXELS,
        "an attached image's width × height at most, as its header declares them (and 16,384 "
        "pixels a side); beyond it, 400 `ATTACHMENT_UNREADABLE`. Imports read back any a Sophos could accept",
        low=1,
        high=PIXELS_CEILING,
        unit="pixels",
    )
    PDF_TIMEOUT: float = setting(
        20,
        "seconds a PDF's text may take to read, in a worker process killed then (400 "
        "`ATTACHMENT_UNREADABLE`), and to wait for a free worker (503 `PDF_BUSY`) "
        "([attachments](attachments.md#reading-a-pdf-its-cost-bounded))",
        above=0,
        high=3600,
        unit="seconds",
    )
    WEBHOOK_ALLOWED_HOSTS: str = setting(
        "",
        "what a run's webhook may call: host names, `.domain` suffixes and networks (CIDRs), comma-separated; empty: "
        "any host whose every address is public (no private, loopback or link-local one) ([security](security.md#webhooks))",
    )
    WEBHOOK_TIMEOUT_SECONDS: float = setting(
        10, "seconds a webhook call may take, all of it (then it is retried)", low=1, high=60
    )
    WEBHOOK_RETRY_SECONDS: float = setting(
        10, "the wait before a failed webhook call's first retry, doubling each time (8 calls at most)", low=0.1, high=3600
    )
    PDF_MEMORY: int = setting(
        512 * 1024 * 1024,
        "bytes of memory (address space) a PDF worker process may use "
        "(pypdf alone takes ~45 MB); a PDF needing more: 400 `ATTACHMENT_UNREADABLE`",
        low=128 * 1024 * 1024,
        unit="bytes",
    )
    PDF_WORKERS: int = setting(2, "PDFs read at once, each by a worker process of its own", low=1, high=64)

    @property
    def answer_limit(self) -> int:
        """The longest answer, in tokens: MODEL_MAX_TOKENS, or by default half the window, and
        never less than the room the context budget keeps for it (MODEL_RESERVE). A model in a
        loop stops there instead of filling the server's window (issue 35: 6,332 tokens, 290 s),
        while a thinking model (its thinking counts) or a long program still has room: the
        reserve alone (1,024 by default) would cut both."""
        return self.MODEL_MAX_TOKENS or max(self.MODEL_RESERVE, self.MODEL_CONTEXT // 2)

    @property
    def attachment_limits(self) -> AttachmentLimits:
        """What a message may carry, as every edge checks it."""
        return AttachmentLimits(
            self.MAX_ATTACHMENT_BYTES, self.MAX_ATTACHMENTS, attachment_types(self.ATTACHMENT_TYPES), self.MAX_IMAGE_PIXELS
        )

    @property
    def webhook_hosts(self) -> AllowedHosts:
        """What a webhook may call (WEBHOOK_ALLOWED_HOSTS, checked at load)."""
        return AllowedHosts.parse(self.WEBHOOK_ALLOWED_HOSTS)

    @property
    def storage_backend(self) -> str:
        """sqlite, postgres or memory: STORAGE_BACKEND, or what an unset one means."""
        return self.STORAGE_BACKEND or ("postgres" if self.DATABASE_URL else "sqlite")


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings from the environment (`env`, or the process's) over `defaults.yaml` over
    the declared defaults; SettingsError names the first value that cannot be used."""
    env = os.environ if env is None else env
    declared = declarations(Settings)
    defaults = {d.name: d.default for d in declared}
    config_dir = env.get("CONFIG_DIR") or defaults["CONFIG_DIR"]
    fixed = {d.name for d in declared if d.rule.env_only}
    raw = merged(defaults, defaults_file(Path(config_dir) / "defaults.yaml"), env, fixed)
    values = {d.name: read(d, raw[d.name]) for d in declared}
    for check in CROSS_CHECKS:
        check(values, env)
    return Settings(**values)
