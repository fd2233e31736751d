"""PresetStore on the SQLite file, on the run store's writer and reader threads."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.sqlite.database import Worker, transaction
from adapters.sqlite.rows import fetchall
from domain.model import SystemMode, iso
from domain.models import ChatSettings
from domain.presets import DEFAULT_NAME, Preset
from ports.presets import PresetStore

COLUMNS = "name, model, system, system_mode, updated_at"


def preset_from_row(row: Sequence[Any]) -> Preset:
    name, model, system, mode, updated = row
    return Preset(name, ChatSettings(model, system, SystemMode(mode)), datetime.fromisoformat(updated))


class SqlitePresetStore(PresetStore):
    def __init__(self, writer: Worker, reader: Worker) -> None:
        self._writer = writer
        self._reader = reader

    async def presets(self, owner: str) -> Sequence[Preset]:
        sql = f"SELECT {COLUMNS} FROM chat_presets WHERE owner = ? ORDER BY name"  # BINARY: code point order
        return [preset_from_row(r) for r in await self._reader.run(fetchall, sql, (owner,))]

    async def put_preset(self, owner: str, preset: Preset, limit: int) -> bool:
        s = preset.settings
        row = (owner, preset.name, s.model, s.system, s.system_mode.value, iso(preset.updated_at))

        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                if preset.name != DEFAULT_NAME:
                    (named,) = c.execute(
                        "SELECT count(*) FROM chat_presets WHERE owner = ? AND name <> ?", (owner, DEFAULT_NAME)
                    ).fetchone()
                    known = c.execute("SELECT 1 FROM chat_presets WHERE owner = ? AND name = ?", (owner, preset.name)).fetchone()
                    if known is None and named >= limit:
                        return False
                c.execute(f"INSERT OR REPLACE INTO chat_presets (owner, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", row)
                return True

        return await self._writer.run(write)

    async def delete_preset(self, owner: str, name: str) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            with transaction(c):
                return c.execute("DELETE FROM chat_presets WHERE owner = ? AND name = ?", (owner, name)).rowcount > 0

        return await self._writer.run(write)
