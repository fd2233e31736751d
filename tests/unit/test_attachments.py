"""The attachment rules of the domain: what is accepted, how the model reads a file."""

from __future__ import annotations

import pytest

from domain.attachments import (
    ATTACHMENT_TYPES,
    IMAGE_TYPES,
    PIXELS_CEILING,
    WIDEST_LIMITS,
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
from tests.support.files import gif, jpeg, png, png_claiming, webp


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
        ("photo.JPG", "image/jpg", jpeg(4, 3), "image/jpeg"),
        ("dot", "image/png", png(), "image/png"),
        ("a.txt", "text/plain; charset=utf-8", "\ufeffcafé".encode(), "text/plain"),
    ],
)
def test_a_file_is_typed_by_what_it_says_and_what_its_bytes_bear_out(
    name: str, declared: str | None, data: bytes, kind: str
) -> None:
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
    files = (
        Attachment("big.log", "text/plain", len(big), "a" * 64),
        Attachment("s.txt", "text/plain", 4, "b" * 64),
        Attachment("dot.png", "image/png", 3, "c" * 64),
        Attachment("gone.txt", "text/plain", 1, "d" * 64),
    )
    stored = {
        "a" * 64: StoredFile("text/plain", big.encode(), big),
        "b" * 64: StoredFile("text/plain", b"tiny", small),
        "c" * 64: StoredFile("image/png", b"png", None),
    }
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
    with pytest.raises(
        AttachmentTypeNotAllowed, match=r"a.txt: text/plain is not a file type this server accepts \(PNG, JPEG, GIF, WebP\)"
    ):
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
        ({"MAX_IMAGE_PIXELS": "0"}, "MAX_IMAGE_PIXELS must be between 1 and 268435456 pixels"),
        ({"PDF_TIMEOUT": "0"}, "PDF_TIMEOUT must be above 0, at most 3600 seconds"),
        ({"PDF_MEMORY": "1000000"}, "PDF_MEMORY must be at least 134217728 bytes"),
        ({"PDF_WORKERS": "0"}, "PDF_WORKERS must be between 1 and 64"),
    ],
)
def test_attachment_settings_out_of_bounds_are_refused_at_start(env: dict[str, str], words: str) -> None:
    with pytest.raises(SettingsError) as e:
        load_settings({"CONFIG_DIR": "/nonexistent", **env})
    assert words in str(e.value)


def test_attachment_settings_make_the_limits() -> None:
    settings = load_settings(
        {
            "CONFIG_DIR": "/nonexistent",
            "MAX_ATTACHMENT_BYTES": "2048",
            "MAX_ATTACHMENTS": "3",
            "ATTACHMENT_TYPES": "text/markdown,pdf",
        }
    )
    assert settings.attachment_limits == AttachmentLimits(2048, 3, frozenset({"text/markdown", "application/pdf"}))
    assert load_settings({"CONFIG_DIR": "/nonexistent", "MAX_IMAGE_PIXELS": "1000"}).attachment_limits.max_pixels == 1000


@pytest.mark.parametrize(
    ("name", "kind", "data"),
    [
        ("huge.png", "image/png", png_claiming(65535, 65535)),  # 69 bytes claiming 4.3 gigapixels
        ("huge.jpg", "image/jpeg", jpeg(20000, 20000)),
        ("huge.jpg", "image/jpeg", jpeg(9000, 9000, progressive=True)),  # 81 MP, each side allowed
        ("huge.webp", "image/webp", webp(16383, 16383)),
        ("huge.webp", "image/webp", webp(16384, 16384, "VP8L")),
        ("huge.webp", "image/webp", webp(16383, 16383, "VP8 ")),
        ("huge.gif", "image/gif", gif(65535, 65535)),
        ("long.png", "image/png", png_claiming(20000, 100)),  # 2 MP, but a side past 16384
    ],
)
def test_an_image_declaring_more_pixels_than_allowed_is_refused_from_its_header(name: str, kind: str, data: bytes) -> None:
    with pytest.raises(
        AttachmentUnreadable, match=rf"{name}: a \d+×\d+ image is larger than Sophos reads \(at most 40 megapixels"
    ):
        parse_upload(name, kind, data)


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("image/png", png_claiming(7728, 5152)),  # a 40-megapixel phone photo
        ("image/jpeg", jpeg(7728, 5152)),
        ("image/webp", webp(7728, 5152)),
        ("image/webp", webp(16383, 2000, "VP8L")),  # a panorama
        ("image/webp", webp(640, 480, "VP8 ")),
        ("image/gif", gif(640, 480)),
    ],
)
def test_an_image_within_the_pixel_limit_is_accepted(kind: str, data: bytes) -> None:
    assert parse_upload("photo", kind, data).attachment.media_type == kind


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("image/jpeg", jpeg(640, 480)[:26] + b"\xff\xd9"),  # cut inside its frame header
        ("image/jpeg", b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 20 + b"\xff\xd9"),  # a scan before any frame
        ("image/jpeg", b"\xff\xd8" + b"\xff" * 100_000 + b"\xff\xd9"),  # fill bytes only: bounded, refused
        ("image/jpeg", jpeg(0, 480)),
        ("image/webp", webp(640, 480)[:28]),
        ("image/webp", webp(640, 480).replace(b"VP8X", b"VP8Y")),
        ("image/gif", gif(0, 10)),
        ("image/png", png_claiming(0, 10)),
    ],
)
def test_an_image_whose_header_is_cut_short_or_gives_no_size_is_unreadable(kind: str, data: bytes) -> None:
    with pytest.raises(AttachmentUnreadable, match="not a readable"):
        parse_upload("x", kind, data)


def test_the_pixel_limit_is_a_setting_and_an_import_reads_any_a_sophos_could_accept() -> None:
    small = AttachmentLimits(max_pixels=100)
    assert parse_upload("dot.png", "image/png", png(10, 10), small).attachment.size > 0
    with pytest.raises(AttachmentUnreadable, match=r"a 11×10 image is larger than Sophos reads \(at most 0.0001 megapixels"):
        parse_upload("dot.png", "image/png", png(11, 10), small)
    assert WIDEST_LIMITS.max_pixels == PIXELS_CEILING == 16384 * 16384
    assert parse_upload("big.webp", "image/webp", webp(16384, 16384), WIDEST_LIMITS).attachment.media_type == "image/webp"
