"""Services: what the edges (HTTP routes, CLI commands) may use, built once by the
composition root and handed to Starlette (app.state.services) and click (ctx.services).

Each field is a getter of a singleton rather than the object itself, because what a
command needs differs so much: `sophos conversations` must not build the agent graph,
start MCP servers or import langgraph's model clients. The getters are typed, so an edge
sees use cases and ports, never the container or an adapter class."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from domain.attachments import DEFAULT_LIMITS, AttachmentLimits
from domain.errors import NotSupported

if TYPE_CHECKING:
    from ports.backend import Backend
    from ports.graphs import GraphCatalog
    from ports.model import ModelPort
    from ports.storage import StoragePort
    from ports.tools import ToolPort
    from ports.workers import Worker
    from services.allow_rules import AllowRules
    from services.assistants import AssistantService
    from services.audit import AuditTrail
    from services.conversations import ConversationService
    from services.files import FileService
    from services.hosted import HostedRuns
    from services.knowledge import KnowledgeService
    from services.memory import MemoryService
    from services.models import ModelCatalog
    from services.presets import PresetService
    from services.queueing import QueueService
    from services.runs import RunService
    from services.schedules import ScheduleService
    from services.search import SearchService
    from services.sessions import SessionService
    from services.store import StoreService
    from services.supervisor import Supervisor
    from services.transfer import TransferService
    from services.usage import UsageService
    from services.user_data import UserData
    from services.user_deletion import UserDeletion
    from services.users import UserService
    from services.webhooks import WebhookService


class Exposition(Protocol):
    """The metrics as GET /metrics serves them (the server's metrics adapter)."""

    def render(self, accept: str | None = None) -> tuple[bytes, str]: ...


@dataclass(frozen=True)
class Services:
    runs: Callable[[], RunService]
    queue: Callable[[], QueueService]
    conversations: Callable[[], ConversationService]
    supervisor: Callable[[], Supervisor]
    search: Callable[[], SearchService]
    allow_rules: Callable[[], AllowRules]
    metrics: Callable[[], Exposition]
    model: Callable[[], ModelPort]
    models: Callable[[], ModelCatalog]  # the model server's list, kept briefly
    tools: Callable[[], ToolPort]
    storage: Callable[[], StoragePort]
    backend: Callable[[], Backend]  # the storage itself: its health, its run store
    sessions: Callable[[], SessionService]
    users: Callable[[], UserService]  # managing users and their tokens
    transfer: Callable[[], TransferService]  # export and import of whole conversations
    bulk: Callable[[], Worker]  # threads for a request's bulk work (an export's zip), never the default executor's
    files: Callable[[], FileService] | None = None  # the files messages carry (None: not served)
    attachment_limits: AttachmentLimits = DEFAULT_LIMITS  # what a message may carry (settings)
    graphs: Callable[[], GraphCatalog] | None = None  # the graphs of LANGGRAPH_JSON (None: not wired)
    hosted: Callable[[], HostedRuns] | None = None  # runs of those graphs (None: not wired)
    assistants: Callable[[], AssistantService] | None = None  # those graphs' assistants (None: not wired)
    presets: Callable[[], PresetService] | None = None  # each user's saved chat settings (None: not wired)
    schedules: Callable[[], ScheduleService] | None = None  # each user's scheduled runs (None: not wired)
    webhook_service: Callable[[], WebhookService] | None = None  # runs' webhooks (None: not wired)
    usage: Callable[[], UsageService] | None = None  # tokens and seconds per user, model and day (None: not wired)
    audit: Callable[[], AuditTrail] | None = None  # the audit log (None: not wired)
    store: Callable[[], StoreService] | None = None  # each user's long-term store (None: not wired)
    memory: Callable[[], MemoryService] | None = None  # what the agent remembers about each user (None: not wired)
    knowledge: Callable[[], KnowledgeService] | None = None  # each user's document collections (None: not wired)
    user_data: Callable[[], UserData] | None = None  # a user's store items and collections, as a whole
    user_deletion: Callable[[], UserDeletion] | None = None  # `sophos users delete`
    auto_title: bool = True  # AUTO_TITLE: the model titles a conversation after its first answer

    def webhooks(self) -> WebhookService:
        """The runs' webhooks; NotSupported when this server calls none."""
        if self.webhook_service is None:
            raise NotSupported("This server calls no webhooks")
        return self.webhook_service()
