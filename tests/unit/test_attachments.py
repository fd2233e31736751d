"""The attachment rules of the domain: what is accepted, how the model reads a file."""

from __future__ import annotations

import pytest

from domain.attachments import (
    ATTACHMENT_TYPES,
    IMAGE_TYPES,
    Attachment,
    AttachmentLimits,
    StoredFile,
    attachment_types,
    fenced_block,
    parse_upload,
)
from domain.context import with_attachments
from domain.errors import (
    AttachmentTooLarge,
    AttachmentTypeNotAllowed,
    AttachmentUnreadable,
    TooManyAttachments,
)
from domain.model import UserMessage
from entrypoints.settings import SettingsError, load_settings
from tests.support.files import png


def test_a_fence_is_longer_than_any_run_of_backticks_in_the_file() -> None:
    text = "see:\n```python\nx = 1\n```\nand ````` too"
    assert fenced_block("notes.md", text) == "notes.md:\n``````\n" + text + "\n``````"
    assert fenced_block("a.txt", "plain") == "a.txt:\n```\nplain\n```"


@pytest.mark.parametrize(
    ("name", "declared", "data", "kind"),
    [
        ("notes.md", None, b"# hi", "text/markdown"),
        ("notes.md", "application/octet-stream", b"# hi", "text/markdown"),
        ("data", "application/json", b"{}", "application/json"),
        ("Makefile", "", b"all:\n\techo hi\n", "text/plain"),  # untyped, no extension, but text
        ("photo.JPG", "image/jpg", b"\xff\xd8\xff\xe0" + b"\0" * 20 + b"\xff\xd9", "image/jpeg"),
        ("dot", "image/png", png(), "image/png"),
        ("a.txt", "text/plain; charset=utf-8", "\ufeffcafé".encode(), "text/plain"),
    ],
)
def test_a_file_is_typed_by_what_it_says_and_what_its_bytes_bear_out(name: str, declared: str | None, data: bytes, kind: str) -> None:
    assert parse_upload(name, declared, data).attachment.media_type == kind


def test_a_text_files_text_loses_its_byte_order_mark() -> None:
    assert parse_upload("a.txt", "text/plain", "\ufeffcafé".encode()).text == "café"


@pytest.mark.parametrize(
    ("name", "declared", "data", "error"),
    [
        ("a.svg", "image/svg+xml", b"<svg/>", AttachmentTypeNotAllowed),
        ("blob", None, b"\x00\x01", AttachmentTypeNotAllowed),
        ("x.png", "image/png", png()[:20], AttachmentUnreadable),  # truncated before its size
        ("x.gif", "image/gif", png(), AttachmentUnreadable),
        ("x.txt", "text/plain", b"a\x00b", AttachmentUnreadable),
        ("x.pdf", "application/pdf", b"not a pdf", AttachmentUnreadable),
        ("x.txt", "text/plain", b"", AttachmentUnreadable),
        ("/", "text/plain", b"x", AttachmentUnreadable),
        ("big.txt", "text/plain", b"x" * (10 * 1024 * 1024 + 1), AttachmentTooLarge),
    ],
)
def test_bad_files_are_refused_with_their_own_error(name: str, declared: str | None, data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_upload(name, declared, data)


def test_a_name_keeps_its_last_path_part_without_invisible_characters() -> None:
    assert parse_upload("../../etc/\u202etxt.exe", "text/plain", b"x").attachment.name == "txt.exe"
    assert parse_upload("C:\\Users\\me\\a.csv", None, b"a,b").attachment.name == "a.csv"


def test_the_files_of_a_message_share_their_part_of_the_budget_head_and_tail() -> None:
    big, small = "".join(f"{i:05d}\n" for i in range(5000)), "tiny"
    files = (Attachment("big.log", "text/plain", len(big), "a" * 64), Attachment("s.txt", "text/plain", 4, "b" * 64),
             Attachment("dot.png", "image/png", 3, "c" * 64), Attachment("gone.txt", "text/plain", 1, "d" * 64))
    stored = {"a" * 64: StoredFile("text/plain", big.encode(), big), "b" * 64: StoredFile("text/plain", b"tiny", small),
              "c" * 64: StoredFile("image/png", b"png", None)}
    sent = with_attachments(UserMessage("look", attachments=files), stored, 3000)
    assert sent.content.startswith("look\n\nbig.log:\n```\n00000\n")
    assert "characters left out here to fit the model's context" in sent.content
    assert "s.txt:\n```\ntiny\n```" in sent.content and "[gone.txt: the file is no longer stored]" in sent.content
    assert len(sent.content) < 3000
    assert [i.data for i in sent.images] == [b"png"] and sent.attachments == files


@pytest.mark.parametrize(
    ("spec", "types"),
    [
        ("text,image,pdf", ATTACHMENT_TYPES),
        ("image/*", IMAGE_TYPES),
        (" PDF , image/jpg", frozenset({"application/pdf", "image/jpeg"})),  # any case, an alias
        ("none", frozenset()),
        ("", frozenset()),
    ],
)
def test_attachment_types_are_kinds_families_or_media_types_sophos_reads(spec: str, types: frozenset[str]) -> None:
    assert attachment_types(spec) == types


@pytest.mark.parametrize("spec", ["image/svg+xml", "application/octet-stream", "*", "video/*", "text,exe"])
def test_a_type_sophos_cannot_read_cannot_be_let_in(spec: str) -> None:
    with pytest.raises(ValueError, match="is not text, image, pdf"):
        attachment_types(spec)


def test_limits_bound_size_count_and_type() -> None:
    limits = AttachmentLimits(max_bytes=512, max_files=1, types=attachment_types("image"))
    assert parse_upload("dot.png", "image/png", png(), limits).attachment.media_type == "image/png"
    with pytest.raises(AttachmentTooLarge, match="big.png is larger than 512 bytes"):
        parse_upload("big.png", "image/png", b"x" * 513, limits)
    with pytest.raises(AttachmentTypeNotAllowed, match=r"a.txt: text/plain is not a file type this server accepts \(PNG, JPEG, GIF, WebP\)"):
        parse_upload("a.txt", "text/plain", b"hi", limits)
    with pytest.raises(AttachmentTypeNotAllowed, match="this server accepts"):
        parse_upload("Makefile", None, b"all:\n", limits)  # untyped text: text/plain, which is not allowed here
    with pytest.raises(TooManyAttachments, match="at most 1 files"):
        limits.check_count(["a", "b"])
    with pytest.raises(TooManyAttachments, match="accepts no attachments"):
        AttachmentLimits(max_files=0).check_count(["a"])
    assert AttachmentLimits().shown == "text, code, Markdown, CSV, JSON, PDF, PNG, JPEG, GIF, WebP"


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"MAX_ATTACHMENT_BYTES": "0"}, "MAX_ATTACHMENT_BYTES must be between 1 and 67108864 (64 MB)"),
        ({"MAX_ATTACHMENT_BYTES": str(65 * 1024 * 1024)}, "MAX_ATTACHMENT_BYTES must be between"),
        ({"MAX_ATTACHMENTS": "33"}, "MAX_ATTACHMENTS must be between 0 (off) and 32"),
        ({"ATTACHMENT_TYPES": "text,image/svg+xml"}, "ATTACHMENT_TYPES: 'image/svg+xml' is not"),
    ],
)
def test_attachment_settings_out_of_bounds_are_refused_at_start(env: dict[str, str], words: str) -> None:
    with pytest.raises(SettingsError) as e:
        load_settings({"CONFIG_DIR": "/nonexistent", **env})
    assert words in str(e.value)


def test_attachment_settings_make_the_limits() -> None:
    settings = load_settings({"CONFIG_DIR": "/nonexistent", "MAX_ATTACHMENT_BYTES": "2048", "MAX_ATTACHMENTS": "3",
                              "ATTACHMENT_TYPES": "text/markdown,pdf"})
    assert settings.attachment_limits == AttachmentLimits(2048, 3, frozenset({"text/markdown", "application/pdf"}))
