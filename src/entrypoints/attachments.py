"""Attachments as the JSON chat body carries them (`attachments: [{name, type, data}]`,
data in base64): read the same way by the HTTP route and the CLI's local client."""

from __future__ import annotations

import base64
import binascii

from domain.attachments import AttachmentLimits, Upload, clean_name, parse_upload
from domain.errors import AttachmentUnreadable, InvalidInput

FILE_KEYS = {"name", "type", "data"}


def json_files(value: object, limits: AttachmentLimits) -> tuple[Upload, ...]:
    """`attachments: [{name, type, data (base64)}]`, each file checked against `limits`."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidInput("attachments must be a list of {name, type, data}")
    limits.check_count(value)
    out = []
    for item in value:
        if not isinstance(item, dict) or set(item) - FILE_KEYS or not isinstance(item.get("data"), str):
            raise InvalidInput("Each attachment is {name, type, data}, data in base64")
        name = clean_name(item.get("name"))
        data: str = item["data"]
        if len(data) > (limits.max_bytes * 4 // 3) + 4:  # refused before decoding
            raise limits.too_large(name)
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise AttachmentUnreadable(f"{name}: data is not base64") from None
        out.append(parse_upload(name, item.get("type"), raw, limits))
    return tuple(out)
