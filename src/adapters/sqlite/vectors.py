"""Vectors in the SQLite file: each a BLOB of little-endian float32s (sqlite-vec's format),
compared by `vec_distance_cosine(a, b)` (1 - the cosine).

The function is sqlite-vec's (the `sqlite-vec` package's loadable extension) where Python's
sqlite3 can load extensions, and else the same function in Python, registered on the
connection: CPython built without `--enable-loadable-sqlite-extensions` (pyenv's default
build, this project's test machine's) has no `enable_load_extension`. The SQL is the same
either way; the Python one costs ~25 µs a row at 256 dimensions (docs/benchmarks.md)."""

from __future__ import annotations

import logging
import sqlite3
import struct
from array import array
from collections.abc import Sequence
from operator import mul

log = logging.getLogger(__name__)


def to_blob(values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _cosine_distance(a: bytes | None, b: bytes | None) -> float | None:
    """1 - the cosine of two unit vectors (NULL for a missing one or two widths)."""
    if a is None or b is None or len(a) != len(b) or len(a) % 4:
        return None
    x, y = array("f"), array("f")
    x.frombytes(a)
    y.frombytes(b)
    return 1.0 - float(sum(map(mul, x, y)))


def install(conn: sqlite3.Connection) -> str:
    """Give `conn` `vec_distance_cosine`: "sqlite-vec" when the extension loaded, else "python"."""
    if hasattr(conn, "enable_load_extension"):
        try:
            import sqlite_vec  # type: ignore[import-untyped]

            conn.enable_load_extension(True)
            try:
                sqlite_vec.load(conn)
            finally:
                conn.enable_load_extension(False)
            return "sqlite-vec"
        except (ImportError, sqlite3.OperationalError) as e:  # a missing or unloadable extension: the same function in Python
            log.info("sqlite-vec not loaded (%s); vectors are compared in Python", e)
    conn.create_function("vec_distance_cosine", 2, _cosine_distance, deterministic=True)
    return "python"
