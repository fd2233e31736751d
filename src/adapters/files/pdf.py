"""TextExtractor on pypdf (pure Python, no system library), off the event loop and
bounded: a hostile PDF costs at most PDF_SECONDS of a worker thread and PDF_PAGES pages."""

from __future__ import annotations

import asyncio
import io
import logging

from domain.errors import AttachmentUnreadable
from ports.attachments import TextExtractor

log = logging.getLogger(__name__)

PDF_SECONDS = 20.0
PDF_PAGES = 500
PDF_CHARS = 2_000_000  # more than any context holds: the prompt shortens it anyway


def _extract(name: str, data: bytes) -> str:
    from pypdf import PdfReader  # imported on first use: most processes never read a PDF
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise AttachmentUnreadable(f"{name}: the PDF is encrypted")
        parts: list[str] = []
        size = 0
        for page in reader.pages[:PDF_PAGES]:
            text = page.extract_text() or ""
            parts.append(text)
            size += len(text)
            if size >= PDF_CHARS:
                break
    except AttachmentUnreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, OSError) as e:
        log.info("PDF %s could not be read: %s", name, e)
        raise AttachmentUnreadable(f"{name}: the PDF cannot be read (damaged or not a PDF)") from None
    text = "\n\n".join(p.strip() for p in parts if p.strip())[:PDF_CHARS]
    if not text:
        raise AttachmentUnreadable(f"{name}: the PDF has no text to read (a scan or images only)")
    return text


class PypdfExtractor(TextExtractor):
    def __init__(self, seconds: float = PDF_SECONDS) -> None:
        self.seconds = seconds

    async def pdf_text(self, name: str, data: bytes) -> str:
        try:
            return await asyncio.wait_for(asyncio.to_thread(_extract, name, data), self.seconds)
        except TimeoutError:
            raise AttachmentUnreadable(f"{name}: the PDF took too long to read") from None
