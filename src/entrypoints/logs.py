"""Logging: one line per record; conversation and run ids on every line about a run."""

from __future__ import annotations

import logging
import sys


class ContextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ctx = [
            f"{key}={getattr(record, key)}" for key in ("conversation_id", "run_id", "schedule_id") if getattr(record, key, None)
        ]
        return f"{line} {' '.join(ctx)}" if ctx else line


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ContextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "mcp", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
