"""An image's declared dimensions, read from its header alone (PNG, GIF, JPEG, WebP):
checked against the pixel limit before anything decodes the image."""

from __future__ import annotations


def image_size(media_type: str, data: bytes) -> tuple[int, int] | None:
    """(width, height) as the image's header declares them; None when the file does not
    start as its type says or its header is cut short or gives no size (a truncated or
    renamed file fails here, before a model server chokes on it). Reads the header only,
    in bounded steps: PNG's IHDR, GIF's logical screen, JPEG's frame header (SOF), WebP's
    VP8, VP8L or VP8X chunk."""
    if media_type == "image/png":
        if len(data) < 33 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
            return None
        return _positive(int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"))
    if media_type == "image/gif":
        if len(data) < 14 or data[:6] not in (b"GIF87a", b"GIF89a"):
            return None
        return _positive(int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little"))
    if media_type == "image/jpeg":
        if len(data) < 4 or data[:3] != b"\xff\xd8\xff" or b"\xff\xd9" not in data[-64:]:
            return None
        return _jpeg_size(data)
    if media_type == "image/webp":
        if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
            return None
        return _webp_size(data)
    return None


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


# JPEG's frame headers: SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC), which share the range
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STEPS = 4096  # markers read before the frame header at most (a photo has a dozen)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    for _ in range(_JPEG_STEPS):
        if i + 4 > len(data) or data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # a fill byte
            i += 1
        elif marker == 0x01 or 0xD0 <= marker <= 0xD7:  # TEM, RSTn: no length
            i += 2
        elif marker in (0xD9, 0xDA):  # the end, or the scan, before any frame header
            return None
        elif marker in _SOF:
            if i + 9 > len(data):
                return None
            return _positive(int.from_bytes(data[i + 7 : i + 9], "big"), int.from_bytes(data[i + 5 : i + 7], "big"))
        else:
            i += 2 + int.from_bytes(data[i + 2 : i + 4], "big")
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":  # a key frame's start code
        return _positive(int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF)
    if chunk == b"VP8L" and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None
