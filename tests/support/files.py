"""Small real files for attachment tests: a PNG, a PDF with text, made with the stdlib."""

from __future__ import annotations

import struct
import zlib


def png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def png_claiming(width: int, height: int) -> bytes:
    """A small PNG whose header declares `width` x `height` (its pixel data is one row)."""
    real = png(1, 1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    ihdr = b"IHDR" + header
    return real[:8] + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr)) + real[33:]


def jpeg(width: int, height: int, progressive: bool = False) -> bytes:
    """The head of a JPEG declaring `width` x `height`: SOI, a JFIF segment, a frame header
    (SOF0, or SOF2), an empty scan and EOI (enough for a header, not for a decoder)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff" + (b"\xc2" if progressive else b"\xc0") + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    sos = b"\xff\xda" + struct.pack(">H", 8) + b"\x01\x01\x00\x00\x3f\x00"
    return b"\xff\xd8" + app0 + sof + sos + b"\x00" * 16 + b"\xff\xd9"


def webp(width: int, height: int, chunk: str = "VP8X") -> bytes:
    """The head of a WebP declaring `width` x `height` in a VP8X, VP8L or VP8 chunk."""
    if chunk == "VP8X":
        body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    elif chunk == "VP8L":
        body = b"\x2f" + ((width - 1) | (height - 1) << 14).to_bytes(4, "little") + b"\x00" * 5
    else:
        body = b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 4
    chunk_bytes = chunk.encode().ljust(4) + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk_bytes)) + b"WEBP" + chunk_bytes


def gif(width: int, height: int) -> bytes:
    """The head of a GIF whose logical screen is `width` x `height`."""
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b"\x3b"


def pdf_of(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1; the first is the catalog), with its xref."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def stream(entries: bytes, content: bytes) -> bytes:
    return b"<< %s /Length %d >>\nstream\n" % (entries, len(content)) + content + b"\nendstream"


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def pdf(text: str) -> bytes:
    """A one-page PDF whose text is `text` (ASCII, no parentheses)."""
    return pdf_of(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
            stream(b"", f"BT /F1 18 Tf 20 100 Td ({text}) Tj ET".encode()),
            FONT,
        ]
    )


def nested_forms_pdf(pages: int = 500, depth: int = 4, fanout: int = 10, ops: int = 40) -> bytes:
    """A PDF of ~50 KB that pypdf 7 reads for about an hour, to find no text: each page draws
    a form that draws the next one `fanout` times, `depth` levels down, and the last one
    shows `ops` empty strings. pypdf stops a page after 5,000 form invocations (~5 s of CPU
    here), but every page starts again."""
    first = 4 + pages + 1  # catalog, pages, font, the pages, their content, then the forms
    forms = []
    for level in range(depth):
        if level + 1 < depth:
            body = b"/X Do " * fanout
            resources = b"/Resources << /Font << /F1 3 0 R >> /XObject << /X %d 0 R >> >>" % (first + level + 1)
        else:
            body = b"BT /F1 12 Tf 20 100 Td " + b"() Tj " * ops + b"ET"
            resources = b"/Resources << /Font << /F1 3 0 R >> >>"
        forms.append(stream(b"/Type /XObject /Subtype /Form /BBox [0 0 400 144] " + resources, body))
    kids = b" ".join(b"%d 0 R" % (4 + i) for i in range(pages))
    return pdf_of(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d /MediaBox [0 0 400 144] "  # the pages inherit these
            b"/Resources << /Font << /F1 3 0 R >> /XObject << /X %d 0 R >> >> >>" % (kids, pages, first),
            FONT,
            *(b"<< /Type /Page /Parent 2 0 R /Contents %d 0 R >>" % (4 + pages) for _ in range(pages)),
            stream(b"", b"/X Do " * fanout),
            *forms,
        ]
    )


def memory_bomb_pdf(pages: int = 12, megabytes: int = 60) -> bytes:
    """A PDF of ~60 KB a page whose pages each hold `megabytes` MB once inflated (an inline
    image pypdf keeps in memory with the page): 12 pages need ~750 MB to read."""
    content = b"BT /F1 12 Tf 20 100 Td (hello) Tj ET BI /W 1 /H 1 /BPC 8 /CS /G ID " + b"\x01" * (megabytes << 20) + b" EI"
    inflated = stream(b"/Filter /FlateDecode", zlib.compress(content, 9))
    kids = b" ".join(b"%d 0 R" % (4 + i) for i in range(pages))
    return pdf_of(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
            FONT,
            *(
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 144] /Contents %d 0 R "
                b"/Resources << /Font << /F1 3 0 R >> >> >>" % (4 + pages + i)
                for i in range(pages)
            ),
            *(inflated for _ in range(pages)),
        ]
    )
