"""PresetStore on PostgreSQL: a preset saved through one process is every process's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters.postgres.database import PRESET_LOCK, PostgresDatabase
from domain.model import SystemMode
from domain.models import ChatSettings
from domain.presets import DEFAULT_NAME, Preset
from ports.presets import PresetStore

COLUMNS = "name, model, system, system_mode, updated_at"


def preset_from_row(row: Sequence[Any]) -> Preset:
    name, model, system, mode, updated = row
    return Preset(name, ChatSettings(model, system, SystemMode(mode)), updated)


class PostgresPresetStore(PresetStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def presets(self, owner: str) -> Sequence[Preset]:
        async with self.db.cursor() as cur:
            await cur.execute(f'SELECT {COLUMNS} FROM chat_presets WHERE owner = %s ORDER BY name COLLATE "C"', (owner,))
            return [preset_from_row(r) for r in await cur.fetchall()]

    async def put_preset(self, owner: str, preset: Preset, limit: int) -> bool:
        s = preset.settings
        async with self.db.cursor(transaction=True) as cur:
            if preset.name != DEFAULT_NAME:
                # one user's saves one at a time, so two new names racing cannot both pass the limit
                await cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (PRESET_LOCK, owner))
                await cur.execute(
                    "SELECT count(*) FILTER (WHERE name <> %s), bool_or(name = %s) FROM chat_presets WHERE owner = %s",
                    (DEFAULT_NAME, preset.name, owner),
                )
                row = await cur.fetchone()
                named, known = (row[0], bool(row[1])) if row else (0, False)
                if not known and named >= limit:
                    return False
            await cur.execute(
                f"INSERT INTO chat_presets (owner, {COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (owner, name) DO UPDATE SET model = excluded.model, system = excluded.system, "
                "system_mode = excluded.system_mode, updated_at = excluded.updated_at",
                (owner, preset.name, s.model, s.system, s.system_mode.value, preset.updated_at),
            )
            return True

    async def delete_preset(self, owner: str, name: str) -> bool:
        async with self.db.cursor() as cur:
            await cur.execute("DELETE FROM chat_presets WHERE owner = %s AND name = %s RETURNING name", (owner, name))
            return await cur.fetchone() is not None
