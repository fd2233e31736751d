"""What every model call sends before any message (the system prompt and the tool
definitions), measured against the prompt budget for the start-up warning and `doctor`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from domain.context import FixedCost, fixed_cost

if TYPE_CHECKING:
    from entrypoints.container import Container

log = logging.getLogger(__name__)


async def measure(container: Container) -> FixedCost:
    """The fixed cost with the tools as listed now (listing waits for the tool servers'
    first start, bounded by MCP_START_TIMEOUT)."""
    specs = await container.tools().list_tools()
    return fixed_cost(container.prompt().read(), specs, container.context())


async def warn_if_crowded(container: Container) -> str | None:
    """Log one warning when the system prompt and the tools crowd the budget; never raises:
    a server still starts and serves with a small window."""
    try:
        warning = (await measure(container)).warning()
    except Exception:
        log.debug("could not measure the prompt's fixed part", exc_info=True)
        return None
    if warning:
        log.warning("%s", warning)
    return warning
