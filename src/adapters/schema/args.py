"""ArgsChecker over the `jsonschema` library: edited tool arguments against the tool's
input schema (as its MCP server declared it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from ports.approvals import ArgsChecker


class JsonSchemaArgs(ArgsChecker):
    def check(self, schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
        try:
            validator_class = jsonschema.validators.validator_for(dict(schema))
            error = jsonschema.exceptions.best_match(validator_class(dict(schema)).iter_errors(dict(args)))
        except (jsonschema.exceptions.SchemaError, TypeError, ValueError) as e:
            return f"the tool's schema cannot be checked ({type(e).__name__})"
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message
