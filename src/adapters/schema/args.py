"""ArgsChecker over `jsonschema-rs`: edited tool arguments against the tool's input schema
(as its MCP server declared it).

The schema is the tool server's, so its regex `pattern`s are too: Python's `re` (what the
`jsonschema` library matches them with) backtracks, and `^(a+)+$` against 30 characters held
the event loop for 35 s with the GIL taken. jsonschema-rs matches with Rust's regex engines:
linear time, or for lookaround a backtracking one with a step limit; and it never fetches a
remote `$ref` (offline), so a schema cannot make the server send requests either."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema_rs

from ports.approvals import ArgsChecker

BACKTRACK_LIMIT = 100_000  # steps of one pattern match with lookaround; then it does not match
REGEX_SIZE = 1 << 20  # bytes of a compiled pattern (and of its DFA cache)
PATTERNS = jsonschema_rs.FancyRegexOptions(backtrack_limit=BACKTRACK_LIMIT, size_limit=REGEX_SIZE, dfa_size_limit=REGEX_SIZE)


class JsonSchemaArgs(ArgsChecker):
    def check(self, schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
        try:
            validator = jsonschema_rs.validator_for(dict(schema), pattern_options=PATTERNS, offline=True)
            error = next(iter(validator.iter_errors(dict(args))), None)
        except (ValueError, TypeError, OverflowError) as e:  # a schema that cannot be compiled
            return f"the tool's schema cannot be checked ({type(e).__name__})"
        if error is None:
            return None
        where = "/".join(str(p) for p in error.instance_path)
        return f"{where}: {error.message}" if where else error.message
