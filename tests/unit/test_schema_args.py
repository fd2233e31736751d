"""Edited tool arguments checked against the tool server's own schema, a peer we do not trust."""

from __future__ import annotations

from adapters.schema.args import JsonSchemaArgs

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}, "note": {"type": "string", "pattern": "^(a+)+$"}},
    "required": ["amount"],
}


def test_arguments_that_fit_pass_and_the_first_misfit_is_named_by_its_path() -> None:
    check = JsonSchemaArgs().check
    assert check(SCHEMA, {"amount": 5}) is None
    assert check(SCHEMA, {"amount": "5"}) == 'amount: "5" is not of type "integer"'
    assert "required" in (check(SCHEMA, {}) or "")


def test_a_backtracking_pattern_from_the_tool_server_is_matched_in_bounded_time() -> None:
    # Python's re needs about 35 s for 30 characters here and doubles with each more:
    # before, this test ran into pytest's timeout
    problem = JsonSchemaArgs().check(SCHEMA, {"amount": 1, "note": "a" * 60 + "!"})
    assert problem is not None and problem.startswith("note: ") and "does not match" in problem
    lookaround = {"type": "string", "pattern": "^(?=a)(a+)+$"}  # the backtracking engine, with a step limit
    assert JsonSchemaArgs().check({"properties": {"x": lookaround}}, {"x": "a" * 60 + "!"}) is not None


def test_a_schema_that_cannot_be_compiled_or_points_elsewhere_is_reported_not_fetched() -> None:
    check = JsonSchemaArgs().check
    assert check({"type": "no-such-type"}, {}) == "the tool's schema cannot be checked (ValidationError)"
    remote = {"$ref": "http://169.254.169.254/latest/meta-data"}
    assert check(remote, {}) == "the tool's schema cannot be checked (ValidationError)"
