"""Files a user message carries: what is accepted, and how the model reads them.

Pure rules over bytes and plain values, the same for every edge (HTTP JSON, multipart,
the CLI): a file is named, typed by what it holds (a declared type is checked against the
file's own bytes, never trusted), bounded, and identified by the SHA-256 of its bytes, so
the same file sent twice is one stored copy. Text (code, Markdown, CSV, JSON, and a PDF's
text) reaches the model as a fenced block under the file's name; an image reaches a model
that can see as the image itself.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from domain.errors import (
    AttachmentTooLarge,
    AttachmentTypeNotAllowed,
    AttachmentUnreadable,
    TooManyAttachments,
)
from domain.images import image_size

# the defaults of MAX_ATTACHMENT_BYTES and MAX_ATTACHMENTS (AttachmentLimits)
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024  # one file; a phone photo or a long PDF fits
MAX_ATTACHMENTS = 8  # files of one message
# what a setting may raise them to: a chat body holds every file at once (base64 in JSON)
ATTACHMENT_BYTES_CEILING = 64 * 1024 * 1024
ATTACHMENTS_CEILING = 32
NAME_MAX = 255  # characters of a file name (most file systems' limit)
# an image's declared size: what a model server or a browser will allocate to decode it (a
# 141-byte PNG can claim 65535 x 65535, 17 GB of pixels). The default of MAX_IMAGE_PIXELS
# holds a 40-megapixel phone photo; no side may exceed 16384 (WebP's own limit is 16383)
MAX_IMAGE_PIXELS = 40_000_000
IMAGE_SIDE_MAX = 16384
PIXELS_CEILING = IMAGE_SIDE_MAX * IMAGE_SIDE_MAX
IMAGE_TOKENS = 768  # what one image costs a vision model's context, about (llava: 576, qwen2.5vl: more)

Kind = Literal["text", "image", "pdf"]

# by media type: what each is, as the model gets it. Not SVG (a script can hide in it) nor
# HTML as a page: every type here is served back as itself or as text/plain only
TEXT_TYPES = frozenset(
    {
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/tab-separated-values",
        "application/json",
        "text/x-python",
        "text/javascript",
        "text/css",
        "text/html",
        "text/xml",
        "application/xml",
        "application/x-yaml",
        "application/toml",
        "text/x-c",
        "text/x-java",
        "text/x-rust",
        "text/x-go",
        "text/x-shellscript",
        "application/sql",
    }
)
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
PDF_TYPE = "application/pdf"
ATTACHMENT_TYPES = TEXT_TYPES | IMAGE_TYPES | {PDF_TYPE}

KINDS: Mapping[str, frozenset[str]] = {"text": TEXT_TYPES, "image": IMAGE_TYPES, "pdf": frozenset({PDF_TYPE})}
_IMAGE_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}

# a file's type by its extension, when the sender says nothing useful (octet-stream, none)
EXTENSIONS: Mapping[str, str] = {
    "txt": "text/plain",
    "log": "text/plain",
    "md": "text/markdown",
    "markdown": "text/markdown",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "json": "application/json",
    "py": "text/x-python",
    "js": "text/javascript",
    "mjs": "text/javascript",
    "ts": "text/javascript",
    "css": "text/css",
    "html": "text/html",
    "htm": "text/html",
    "xml": "text/xml",
    "yaml": "application/x-yaml",
    "yml": "application/x-yaml",
    "toml": "application/toml",
    "c": "text/x-c",
    "h": "text/x-c",
    "cpp": "text/x-c",
    "java": "text/x-java",
    "rs": "text/x-rust",
    "go": "text/x-go",
    "sh": "text/x-shellscript",
    "sql": "application/sql",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "pdf": PDF_TYPE,
}
_ALIASES = {
    "image/jpg": "image/jpeg",
    "text/x-markdown": "text/markdown",
    "application/x-python": "text/x-python",
    "text/json": "application/json",
    "text/yaml": "application/x-yaml",
    "application/javascript": "text/javascript",
}
_UNTYPED = {"", "application/octet-stream", "binary/octet-stream"}


def size_text(n: int) -> str:
    """A byte count as a limit is read: 10 MB, 512 KB, 300 bytes."""
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class AttachmentLimits:
    """What this deployment accepts: one file's bytes at most, files per message at most
    (0: attachments are off), the media types, and an image's pixels at most
    (MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, ATTACHMENT_TYPES, MAX_IMAGE_PIXELS). Every edge
    checks files against the same limits."""

    max_bytes: int = MAX_ATTACHMENT_BYTES
    max_files: int = MAX_ATTACHMENTS
    types: frozenset[str] = ATTACHMENT_TYPES
    max_pixels: int = MAX_IMAGE_PIXELS

    def check_count(self, uploads: Sequence[object]) -> None:
        if uploads and not self.max_files:
            raise TooManyAttachments("This server accepts no attachments (MAX_ATTACHMENTS is 0)")
        if len(uploads) > self.max_files:
            raise TooManyAttachments(f"A message carries at most {self.max_files} files ({len(uploads)} given)")

    def too_large(self, name: str) -> AttachmentTooLarge:
        return AttachmentTooLarge(f"{name} is larger than {size_text(self.max_bytes)}")

    def check_pixels(self, name: str, width: int, height: int) -> None:
        """AttachmentUnreadable when an image declares more pixels than are read."""
        if width * height > self.max_pixels or max(width, height) > IMAGE_SIDE_MAX:
            raise AttachmentUnreadable(
                f"{name}: a {width}×{height} image is larger than Sophos reads (at most "
                f"{self.max_pixels / 1e6:g} megapixels, {IMAGE_SIDE_MAX} pixels a side; MAX_IMAGE_PIXELS)"
            )

    @property
    def shown(self) -> str:
        """The accepted types as a person reads them: text, code, Markdown, CSV, JSON, PDF, PNG…"""
        parts = ["text, code, Markdown, CSV, JSON"] if TEXT_TYPES <= self.types else sorted(self.types & TEXT_TYPES)
        parts += ["PDF"] if PDF_TYPE in self.types else []
        parts += [shown for media, shown in _IMAGE_NAMES.items() if media in self.types]
        return ", ".join(parts) or "none"

    @property
    def body_bytes(self) -> int:
        """The largest JSON chat body with files: each file base64-encoded (4/3), plus the
        message's own fields."""
        return self.max_files * (self.max_bytes * 4 // 3 + 1024) + 64 * 1024

    @property
    def form_bytes(self) -> int:
        """The largest multipart chat body with files."""
        return self.max_files * (self.max_bytes + 4096) + 256 * 1024


DEFAULT_LIMITS = AttachmentLimits()
# what any Sophos could accept, whatever its settings: an import reads back a file another
# server stored, and the CLI leaves the rest to the server it sends a file to
WIDEST_LIMITS = AttachmentLimits(ATTACHMENT_BYTES_CEILING, ATTACHMENTS_CEILING, max_pixels=PIXELS_CEILING)


def attachment_types(spec: str) -> frozenset[str]:
    """ATTACHMENT_TYPES read: comma-separated kinds (text, image, pdf), `image/*` or
    `text/*`, or media types Sophos knows (text/markdown, image/png…); "none" or empty:
    none. ValueError names an entry that is none of these: a type Sophos does not know
    how to read (SVG, HTML as a page) cannot be let in by a setting."""
    out: set[str] = set()
    for entry in (e.strip().lower() for e in spec.split(",")):
        if entry in ("", "none"):
            continue
        family = entry[:-2] if entry.endswith("/*") else entry
        if family in KINDS:
            out |= KINDS[family]
        elif _ALIASES.get(entry, entry) in ATTACHMENT_TYPES:
            out.add(_ALIASES.get(entry, entry))
        else:
            raise ValueError(
                f"{entry!r} is not text, image, pdf, text/*, image/* or a type Sophos reads "
                "(text/markdown, application/json, image/png, …)"
            )
    return frozenset(out)


@dataclass(frozen=True)
class Attachment:
    """A file of a user message, as stored with it: the bytes are kept apart, once per
    `digest` (the SHA-256 of the bytes, in hex)."""

    name: str
    media_type: str
    size: int
    digest: str

    @property
    def kind(self) -> Kind:
        return kind_of(self.media_type)


@dataclass(frozen=True)
class Upload:
    """A file as sent, checked. `text`: what the model reads of it (a text file's text, a
    PDF's text once extracted; None for an image)."""

    attachment: Attachment
    data: bytes
    text: str | None = None


@dataclass(frozen=True)
class StoredFile:
    """A file's stored bytes and the text the model reads of it (None: an image)."""

    media_type: str
    data: bytes
    text: str | None = None


@dataclass(frozen=True)
class PromptImage:
    """An image as one model call sends it."""

    media_type: str
    data: bytes


def kind_of(media_type: str) -> Kind:
    if media_type in IMAGE_TYPES:
        return "image"
    return "pdf" if media_type == PDF_TYPE else "text"


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_DIGEST_RE = re.compile(r"^[0-9a-f]{64}$")


def is_digest(value: object) -> bool:
    return isinstance(value, str) and _DIGEST_RE.fullmatch(value) is not None


def clean_name(name: object) -> str:
    """A file name as a person sees it: its last path part, without control or format
    characters (a bidi override makes "gnp.exe" read "exe.png"), trimmed and bounded."""
    if not isinstance(name, str):
        raise AttachmentUnreadable("An attachment needs a file name")
    base = re.split(r"[\\/]", name)[-1]
    visible = "".join(ch for ch in base if unicodedata.category(ch) not in ("Cc", "Cf", "Cs")).strip()
    if not visible or visible in (".", ".."):
        raise AttachmentUnreadable("An attachment needs a file name")
    return visible[:NAME_MAX]


def _declared(declared: object) -> str:
    return declared.split(";", 1)[0].strip().lower() if isinstance(declared, str) else ""


def _image_or_pdf(data: bytes) -> bool:
    return data[:5] == b"%PDF-" or data[:4] in (b"\x89PNG", b"GIF8", b"RIFF") or data[:3] == b"\xff\xd8\xff"


def _is_text(data: bytes) -> bool:
    try:
        return "\x00" not in data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False


def _refused(name: str, media: str, limits: AttachmentLimits) -> AttachmentTypeNotAllowed:
    where = "Sophos" if media not in ATTACHMENT_TYPES else "this server"
    return AttachmentTypeNotAllowed(f"{name}: {media or 'an unknown type'} is not a file type {where} accepts ({limits.shown})")


def media_type_of(name: str, declared: object, limits: AttachmentLimits = DEFAULT_LIMITS) -> str:
    """The type the file is taken for: the declared one (parameters dropped) when it is
    one Sophos knows, else the one its extension says; refused unless `limits` allow it."""
    given = _declared(declared)
    given = _ALIASES.get(given, given)
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    by_name = EXTENSIONS.get(ext)
    if given in ATTACHMENT_TYPES:
        media = given
    elif by_name is not None and (given in _UNTYPED or given.startswith("text/")):
        media = by_name
    elif given.startswith("text/"):
        media = "text/plain"
    else:
        raise _refused(name, given, limits)
    if media not in limits.types:
        raise _refused(name, media, limits)
    return media


def decode_text(name: str, data: bytes) -> str:
    """A text file's text: UTF-8 (a byte-order mark dropped), without NUL bytes."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AttachmentUnreadable(f"{name}: not UTF-8 text (a binary file, or another encoding)") from None
    if "\x00" in text:
        raise AttachmentUnreadable(f"{name}: not text (it holds NUL bytes)")
    return text


def parse_upload(name: object, media_type: object, data: bytes, limits: AttachmentLimits = DEFAULT_LIMITS) -> Upload:
    """A file as sent, checked: its name, a type `limits` accept that its bytes bear out,
    at most `limits.max_bytes`. A PDF's text is left to the extractor (services)."""
    clean = clean_name(name)
    if len(data) > limits.max_bytes:
        raise limits.too_large(clean)
    if not data:
        raise AttachmentUnreadable(f"{clean} is empty")
    try:
        media = media_type_of(clean, media_type, limits)
    except AttachmentTypeNotAllowed:
        # an untyped file with no known extension (Makefile, LICENSE, a pipe) is text when
        # its bytes are: anything else stays refused
        if _declared(media_type) not in _UNTYPED or _image_or_pdf(data) or not _is_text(data):
            raise
        if "text/plain" not in limits.types:
            raise _refused(clean, "text/plain", limits) from None
        media = "text/plain"
    text: str | None = None
    if media in IMAGE_TYPES:
        size = image_size(media, data)
        if size is None:
            raise AttachmentUnreadable(f"{clean}: not a readable {media.split('/')[1].upper()} image (broken or another format)")
        limits.check_pixels(clean, *size)
    elif media == PDF_TYPE:
        if not data.startswith(b"%PDF-"):
            raise AttachmentUnreadable(f"{clean}: not a PDF file")
    else:
        text = decode_text(clean, data)
    return Upload(Attachment(clean, media, len(data), digest_of(data)), data, text)


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    return "`" * (longest + 1)


def fenced_block(name: str, text: str) -> str:
    """How the model reads a text file: its name, then its text in a fence no line of it
    can close."""
    fence = _fence(text)
    return f"{name}:\n{fence}\n{text}\n{fence}"


def with_files(text: str, blocks: Sequence[str]) -> str:
    """A user message's text followed by its files' blocks."""
    return "\n\n".join([text, *blocks]) if text else "\n\n".join(blocks)


def attachment_from_fields(fields: object) -> Attachment | None:
    """An Attachment from its stored form ({name, type, size, digest}); None when malformed."""
    if not isinstance(fields, Mapping):
        return None
    name, kind, size, digest = (fields.get(k) for k in ("name", "type", "size", "digest"))
    if not isinstance(name, str) or not isinstance(kind, str) or not isinstance(size, int) or not is_digest(digest):
        return None
    assert isinstance(digest, str)
    return Attachment(name, kind, size, digest)


def attachment_fields(a: Attachment) -> dict[str, object]:
    """The stored form (also the API's): {name, type, size, digest}."""
    return {"name": a.name, "type": a.media_type, "size": a.size, "digest": a.digest}
