"""The saver the engine runs on: a LangGraph checkpoint saver that also answers SaverPort's
reads (ports.saver). adapters.sqlite, adapters.postgres and adapters.memory each provide one;
naming this as a base class lets mypy check that each implements the whole port."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from ports.saver import SaverPort


class Saver(BaseCheckpointSaver[Any], SaverPort):
    pass
