"""Deleting a user with everything they keep (issue 45 item 5; `sophos users delete NAME`):
their conversations (each with its runs, checkpoints, files and search entries, as a
delete of it does), schedules, store items (the agent's memories), knowledge collections,
login sessions, and then the user with their tokens, saved settings, always-allow rules and
usage rows (UserStore.delete_user). The audit log keeps the deletion, and what it removed.

A conversation with a run going stops the deletion there (SessionInProgress): run it again
once the run has ended; what was deleted stays deleted, the user is kept until the end."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from domain.audit import Action
from domain.errors import UserNotFound
from domain.organise import ALL_SHOWN
from domain.principals import Principal
from ports.runs import RunRepository
from ports.schedules import ScheduleStore
from ports.sessions import SessionStore
from ports.users import UserStore
from services.audit import NO_AUDIT, AuditTrail
from services.conversations import ConversationService
from services.user_data import UserData
from services.users import UserService

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Deleted:
    name: str
    conversations: int
    schedules: int
    items: int
    collections: int


class UserDeletion:
    def __init__(
        self,
        users: UserService,
        store: UserStore,
        sessions: SessionStore,
        history: RunRepository,
        conversations: ConversationService,
        data: UserData,
        schedules: ScheduleStore | None = None,
        audit: AuditTrail = NO_AUDIT,
    ) -> None:
        self.users = users
        self.store = store
        self.sessions = sessions
        self.history = history
        self.conversations = conversations
        self.data = data
        self.schedules = schedules
        self.audit = audit

    async def delete(self, name_or_id: str) -> Deleted:
        user = await self.users.get(name_or_id)
        owner = Principal(user.id, user.name, user.role)
        await self.store.set_disabled(user.id, True)  # nothing new starts for them meanwhile
        await self.sessions.delete_principal(user.id)
        schedules = 0
        if self.schedules is not None:
            # through the store: the schedule service would build the run service, which a
            # deletion does not need (and whose parts a one-shot command would have to close)
            for s in await self.schedules.schedules(user.id):
                schedules += await self.schedules.delete_schedule(s.id, user.id)
        conversations = 0
        while found := await self.history.list_conversations(limit=500, owner=user.id, shown=ALL_SHOWN):
            for c in found:
                conversations += await self.conversations.delete(c.id, by=owner)
        items, collections = await self.data.delete(user.id)
        if not await self.store.delete_user(user.id):
            raise UserNotFound(f"No user {name_or_id!r}")
        done = Deleted(user.name, conversations, schedules, items, collections)
        what = f"{user.id}: {conversations} conversations, {schedules} schedules, {items} store items, {collections} collections"
        await self.audit.record(Action.USER_DELETED, user.name, what)
        log.info("user %s deleted (%s)", user.name, what)
        return done
