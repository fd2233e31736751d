"""Export-all and import with what a user keeps besides conversations (issue 45 item 5):
the zip of every conversation gains `sophos-user.json` (entrypoints/user_document.py: the
user's store items, memories among them, and knowledge collections), and an import stores
such a file back beside the conversations it holds. Shared by the HTTP API and the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import domain.transfer as transfer_rules
from domain.model import Conversation, utc_now
from domain.principals import LOCAL, Principal
from entrypoints.bundle import Services
from entrypoints.transfer_document import read_imports
from entrypoints.transfer_files import export_zip, upload_files, zip_name
from entrypoints.user_document import MEMBER, read_user_document, split_user_documents, user_document
from services.user_data import UserCopy


async def export_all(services: Services, by: Principal = LOCAL) -> tuple[str, bytes]:
    """The export-all zip's name and bytes: every conversation of the user, and their `sophos-user.json`."""
    items = [item async for item in services.transfer().export_all(by=by)]
    extra = {}
    if services.user_data is not None:
        kept = await services.user_data().export(by.user_id)
        if kept.items or kept.collections:  # a user who keeps nothing else gets the zip as before
            extra[MEMBER] = user_document(kept)
    # compressing a large history takes a while
    return zip_name(utc_now()), await services.bulk().run(export_zip, items, extra)


async def import_upload(services: Services, data: bytes, by: Principal = LOCAL) -> tuple[list[Conversation], list[UserCopy]]:
    """Store an import's conversations and user files (each file checked whole first)."""
    files = await services.bulk().run(upload_files, data)
    users, conversations = split_user_documents(files)
    copies = [await services.bulk().run(read_user_document, f) for f in users] if services.user_data is not None else []
    imported: Sequence[Conversation] = []
    if conversations or not copies:
        # read whole in the import worker's process, with the limits as they are here
        read = partial(read_imports, limits=transfer_rules.LIMITS)
        imported = await services.transfer().import_files(conversations, read, by=by)
    if services.user_data is not None:
        for copy in copies:
            await services.user_data().restore(by.user_id, copy)
    return list(imported), copies
