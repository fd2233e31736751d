"""How a declared setting is read, checked and documented. Each field of
`entrypoints.settings.Settings` is one declaration, `setting(default, doc, rules...)`: its
type is the field's annotation, and from the declaration alone come the parsing, the range
and choice checks with their error, and the row of the table in docs/configuration.md
(`docs_table`; tests/unit/test_settings.py keeps the docs equal to it)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
RULE = "sophos_setting"  # the dataclass field's metadata key

# a check a declaration names: (setting name, value) -> None, raising SettingsError
Check = Callable[[str, str], None]


class SettingsError(ValueError):
    """Raised when a setting has a value that cannot be used."""


@dataclass(frozen=True)
class Rule:
    """What a declaration says besides its type and default.

    `low`/`high`: an inclusive range, `above`: an exclusive low (numbers); `choices`: the
    values a text may take, read trimmed and in any case ("" among them: unset is allowed);
    `check`: the value's own check; `said`: how the allowed values read in an error and in
    the docs when the numbers alone would mislead; `unit`: of a range; `shown`: the docs'
    default when the value alone would mislead; `fallback`: a value that cannot be used means
    the default (the reference's rule for AGENT_RECURSION_LIMIT); `env_only`: only the
    environment sets it (CONFIG_DIR says where the defaults file is)."""

    doc: str
    low: float | None = None
    high: float | None = None
    above: float | None = None
    choices: tuple[str, ...] = ()
    check: Check | None = None
    said: str | None = None
    unit: str = ""
    shown: str | None = None
    fallback: bool = False
    env_only: bool = False


def setting(
    default: T,
    doc: str,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    choices: tuple[str, ...] = (),
    check: Check | None = None,
    said: str | None = None,
    unit: str = "",
    shown: str | None = None,
    fallback: bool = False,
    env_only: bool = False,
) -> T:
    """One setting: its default, its line in the docs' table, and its rules (see Rule)."""
    rule = Rule(doc, low, high, above, choices, check, said, unit, shown, fallback, env_only)
    return field(default=default, metadata={RULE: rule})


@dataclass(frozen=True)
class Declared:
    name: str
    kind: str  # the annotation: str, int, float or bool
    default: Any
    rule: Rule


def declarations(settings_class: type) -> list[Declared]:
    return [Declared(f.name, str(f.type), f.default, f.metadata[RULE]) for f in dataclasses.fields(settings_class)]


KINDS = {"int": "a whole number", "float": "a number"}


def _either(words: Iterable[str]) -> str:
    items = list(words)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _number(value: float) -> str:
    """30, not 30.0 nor 3e+01; 0.25 as it is."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def _range(rule: Rule) -> str:
    unit = f" {rule.unit}" if rule.unit else ""
    if rule.said is not None:
        return rule.said
    if rule.above is not None:
        low = f"above {_number(rule.above)}"
        return f"{low}, at most {_number(rule.high)}{unit}" if rule.high is not None else f"{low}{unit}"
    if rule.low is not None and rule.high is not None:
        return f"between {_number(rule.low)} and {_number(rule.high)}{unit}"
    if rule.low is not None:
        return f"at least {_number(rule.low)}{unit}"
    return f"at most {_number(rule.high)}{unit}" if rule.high is not None else "any"


def _in_range(rule: Rule, value: float) -> bool:
    return (
        (rule.low is None or value >= rule.low)
        and (rule.high is None or value <= rule.high)
        and (rule.above is None or value > rule.above)
    )


def _choices(rule: Rule) -> str:
    named = _either(c for c in rule.choices if c)
    return f"{named} (or unset)" if "" in rule.choices else named


def read(d: Declared, raw: Any) -> Any:
    """`raw` (from the environment or the defaults file) as the declaration types it;
    SettingsError naming the setting when it cannot be used (or the default, for a
    declaration with `fallback`)."""
    if d.kind == "bool":
        return str(raw).strip().lower() == "true"
    if d.kind == "str":
        text = str(raw)  # YAML reads `model: 7` as a number
        if d.rule.choices:
            text = text.strip().lower()
            if text not in d.rule.choices:
                raise SettingsError(f"{d.name} must be {_choices(d.rule)}, got {text!r}")
        if d.rule.check is not None:
            d.rule.check(d.name, text)
        return text
    number: float
    try:
        number = int(raw) if d.kind == "int" else float(raw)
    except (TypeError, ValueError):
        if d.rule.fallback:
            return d.default
        raise SettingsError(f"{d.name} must be {KINDS[d.kind]}, got {raw!r}") from None
    if not _in_range(d.rule, number):
        if d.rule.fallback:
            return d.default
        raise SettingsError(f"{d.name} must be {_range(d.rule)}, got {number!r}")
    return number


def _values(d: Declared) -> str:
    """The Values column: what the declaration allows, as its checks read it."""
    rule = d.rule
    if d.kind == "bool":
        return "`true` or `false` (only `true`, in any case, is true)"
    if rule.choices:
        named = _either(f"`{c}`" for c in rule.choices if c)
        return f"{named}{', or unset' if '' in rule.choices else ''} (any case)"
    if d.kind == "str":
        return rule.said or "text"
    ranged = rule.low is not None or rule.high is not None or rule.above is not None or rule.said
    words = KINDS[d.kind] + (f", {_range(rule)}" if ranged else "")
    return words + ("; anything else means the default" if rule.fallback else "")


def _default(d: Declared) -> str:
    if d.rule.shown is not None:
        return d.rule.shown
    if d.kind == "bool":
        return f"`{str(d.default).lower()}`"
    if d.default == "":
        return "(empty)"
    return f"`{_number(d.default)}`" if d.kind == "float" else f"`{d.default}`"


def docs_table(settings_class: type) -> str:
    """The settings table of docs/configuration.md, generated from the declarations."""
    lines = ["| Setting | Default | Values | Meaning |", "|---|---|---|---|"]
    lines += [f"| `{d.name}` | {_default(d)} | {_values(d)} | {d.rule.doc} |" for d in declarations(settings_class)]
    return "\n".join(lines) + "\n"


def merged(defaults: Mapping[str, Any], from_file: Mapping[str, Any], env: Mapping[str, str], fixed: set[str]) -> dict[str, Any]:
    """The raw values: the declared defaults, then the file's (but for `fixed` names), then the
    environment's (an empty variable counts as unset)."""
    raw = dict(defaults)
    raw.update({k: v for k, v in from_file.items() if k in defaults and k not in fixed and v is not None})
    raw.update({k: env[k] for k in defaults if env.get(k)})
    return raw


def chosen(name: str, settings: object, env: Mapping[str, str] | None = None) -> bool:
    """Whether a person chose the setting `name`: set in the environment (`env`, or the
    process's), or to another value than its declared default (in `config/defaults.yaml`)."""
    env = os.environ if env is None else env
    default = next(d.default for d in declarations(type(settings)) if d.name == name)
    return bool(env.get(name)) or getattr(settings, name) != default
