"""Files of a new message made ready before anything is stored: a PDF's text extracted,
an image refused for a model that cannot see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from domain.attachments import PDF_TYPE, Upload
from domain.errors import ModelBadResponse, ModelCannotSee, ModelUnreachable
from domain.models import find_model
from ports.attachments import TextExtractor
from services.models import ModelCatalog


class FileIntake:
    def __init__(self, extractor: TextExtractor, catalog: ModelCatalog | None = None) -> None:
        self.extractor = extractor
        self.catalog = catalog  # None: every model is taken to see (nothing to ask)

    async def prepare(self, files: Sequence[Upload], model: str | None) -> tuple[Upload, ...]:
        """`files` with their text; ModelCannotSee when one is an image and the model's
        server reports its capabilities without vision (a server that reports none, as
        OpenAI-compatible ones, is trusted: its own error then says what is wrong);
        AttachmentUnreadable for a PDF without readable text."""
        if any(f.attachment.kind == "image" for f in files):
            await self._check_vision(model)
        out = []
        for f in files:
            if f.attachment.media_type == PDF_TYPE and f.text is None:
                f = replace(f, text=await self.extractor.pdf_text(f.attachment.name, f.data))
            out.append(f)
        return tuple(out)

    async def _check_vision(self, model: str | None) -> None:
        if self.catalog is None:
            return
        name = model or self.catalog.default
        try:
            info = find_model(name, await self.catalog.list())
        except (ModelUnreachable, ModelBadResponse):
            return
        if info is not None and info.capabilities and "vision" not in info.capabilities:
            raise ModelCannotSee(
                f"{name} cannot read images (its server does not list vision among its capabilities): "
                "choose a vision model (for example llava, gemma3 or qwen2.5vl), or send text files only"
            )
