"""Reading back the files a conversation's messages carry (the page's preview, exports)."""

from __future__ import annotations

from collections.abc import Callable

from domain.attachments import Attachment, StoredFile, is_digest
from domain.errors import AttachmentNotFound, InvalidInput
from domain.model import UserMessage
from ports.attachments import AttachmentStore
from ports.checkpoints import CheckpointPort
from services.conversations import ConversationService


class FileService:
    def __init__(self, conversations: ConversationService, threads: CheckpointPort, store: Callable[[], AttachmentStore]) -> None:
        self.conversations = conversations
        self.threads = threads
        self.store = store  # a getter: the saver is opened on first use

    async def read(self, conversation: object, digest: object) -> tuple[Attachment, StoredFile]:
        """A file of the conversation with how its message names it. ConversationNotFound,
        InvalidInput for a malformed digest, AttachmentNotFound when the conversation does
        not hold it (a file of another conversation is not found either)."""
        conv = await self.conversations.summary(conversation)
        if not is_digest(digest):
            raise InvalidInput("An attachment is named by its SHA-256 digest (64 hex digits)")
        assert isinstance(digest, str)
        stored = (await self.store().files(conv.id, [digest])).get(digest)
        if stored is None:
            raise AttachmentNotFound()
        thread = await self.threads.get_thread(conv.id)
        named = (a for m in thread.messages if isinstance(m, UserMessage) for a in m.attachments if a.digest == digest)
        # a file of a message on another branch keeps no name here: it is served all the same
        found = next(named, None) or Attachment("attachment", stored.media_type, len(stored.data), digest)
        return found, stored
