"""The grammar of harness.toml's templates: the {placeholders} of commands, environment values and
request templates, and the messages that say what is wrong with one.

    format_fields(text) -> ([(name, conversion, spec)], None) | ([], why it is not a template)
    command_pins_needed(text) -> [NAME]    the {NAME}s a service.env pin must give
    receives_port(service) -> bool         whether start can know the port the harness picked

Each `*_problems` function is a check of `harness.config.schema`: it takes a converted value and
returns [(field suffix, message)], empty when it is fine. Pure: no I/O.
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Iterator, Mapping
from typing import Any

from harness.config.values import COMMAND_PLACEHOLDERS, PLACEHOLDER, REQUEST_PLACEHOLDERS
from harness.text.control_chars import header_problem

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
START_EXAMPLE = 'start = "python3 svc.py --port {port}"'


def unknown_placeholder(
    name: str,
    allowed: frozenset[str],
    extra: str = "",
    *,
    pins: frozenset[str] = frozenset(),
    who: str = "",
) -> str:
    """The message for an unknown {name} (`who` says where, e.g. " on the baseline side"): the
    closest known name of `allowed` and `pins`, the known names with the pins apart, `extra`."""
    known = " ".join(f"{{{n}}}" for n in sorted(allowed))
    if pins:
        known += " and the service.env pins " + " ".join(f"{{{n}}}" for n in sorted(pins))
    close = difflib.get_close_matches(name, sorted(allowed | pins), n=1)
    mean = f" (did you mean {{{close[0]}}}?)" if close else ""
    return f"unknown placeholder {{{name}}}{who}{mean}; known: {known}{extra}"


def pin_hint(name: str) -> str:
    """What to do about an unknown {name} in start or prepare (after the list of known names)."""
    return f"; write {{{{ and }}}} for literal braces, or pin {name} in service.env"


def no_format_spec(name: str, conversion: str, spec: str) -> str:
    """Why `{name!conversion:spec}` is refused, and how to write what was meant: most often a
    shell's `${VAR:-default}`, whose braces harness reads as its own placeholder."""
    written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
    why = f"placeholder {written}}} takes no !conversion or :format"
    if conversion:
        return f"{why}; write {{{{ and }}}} for literal braces"
    return (
        f"{why}: harness fills {{...}} itself, so a shell's ${written}}} is written "
        f"${{{written}}}}} (write {{{{ and }}}} for literal braces)"
    )


def request_problems(value: object) -> list[tuple[str, str]]:
    """Unknown {name}s in a request template (filled literally: other braces are text)."""
    return [
        (suffix, unknown_placeholder(name, REQUEST_PLACEHOLDERS))
        for suffix, text in strings(value, "")
        for name in dict.fromkeys(PLACEHOLDER.findall(text))
        if name not in REQUEST_PLACEHOLDERS
    ]


def header_problems(value: Mapping[str, str]) -> list[tuple[str, str]]:
    """`request_problems`, and each header that cannot be sent as written: a name that is no
    RFC 7230 token, a value with CR, LF or another control character (a header injected)."""
    found = request_problems(value)
    for name, text in value.items():
        why = header_problem(name, text)
        if why:
            found.append((f".{name}", why))
    return found


def strings(value: object, suffix: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield suffix, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from strings(item, f"{suffix}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from strings(item, f"{suffix}[{index}]")


def env_names(value: Mapping[str, str] | tuple[str, ...]) -> list[tuple[str, str]]:
    bad = [name for name in value if not ENV_NAME.match(name)]
    return [("", f"{name!r} is not an environment variable name") for name in bad]


def format_fields(text: str) -> tuple[list[tuple[str, str, str]], str | None]:
    """The (name, conversion, format spec) fields of a str.format template, or why it is not one."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as error:
        return [], f"{error}; write {{{{ and }}}} for literal braces"
    return [
        (name, conv or "", spec or "") for _, name, spec, conv in parsed if name is not None
    ], None


def placeholder_problems(value: object, *, pins_allowed: bool) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for suffix, text in strings(value, ""):
        fields_, broken = format_fields(text)
        if broken:
            found.append((suffix, broken))
        for name, conv, spec in dict.fromkeys(fields_):
            may_be_pin = pins_allowed and ENV_NAME.match(name) is not None
            if name not in COMMAND_PLACEHOLDERS and not may_be_pin:
                literal = "; write {{ and }} for literal braces"
                found.append((suffix, unknown_placeholder(name, COMMAND_PLACEHOLDERS, literal)))
            elif conv or spec:
                found.append((suffix, no_format_spec(name, conv, spec)))
    return found


def command_problems(value: object) -> list[tuple[str, str]]:
    """Problems of str.format placeholders in `start` or `prepare` (as the service expands them).

    A {NAME} that is not the harness's own but could name an environment variable passes here:
    it must be a service.env pin of each side, which only the loader can tell after merging the
    per-side overrides (`command_pins_needed`). An empty command is a problem too."""
    empty = [
        (suffix, "is empty: give the command to run, e.g. " + START_EXAMPLE)
        for suffix, text in strings(value, "")
        if not text.strip()
    ]
    return empty + placeholder_problems(value, pins_allowed=True)


def receives_port(service: Mapping[str, Any]) -> bool:
    """Whether the service can know the port the harness picked: {port} or {url} in its start
    command, directly or through a service.env pin (a {NAME} of start, or an environment
    variable it reads, e.g. env = { PORT = "{port}" })."""
    texts = [service.get("start", ""), *service.get("env", {}).values()]
    return any(name in ("port", "url") for text in texts for name, _, _ in format_fields(text)[0])


def command_pins_needed(text: str) -> list[str]:
    """The {NAME}s of a start or prepare command that are not the harness's own placeholders, in
    order of first use (each must be a service.env pin); none when `text` is not a template."""
    fields_, broken = format_fields(text)
    if broken:
        return []
    return list(dict.fromkeys(n for n, _, _ in fields_ if n not in COMMAND_PLACEHOLDERS))


def build_problems(value: str) -> list[tuple[str, str]]:
    if not value.strip():
        return [("", "is empty: remove the key when there is nothing to build")]
    used = [
        n
        for n in dict.fromkeys(PLACEHOLDER.findall(value))
        if n in COMMAND_PLACEHOLDERS and n != "config_dir"
    ]
    return [
        (
            "",
            f"build is run as written, before any service exists: {{{name}}} is not filled in "
            "(only {config_dir} is)",
        )
        for name in used
    ]



def env_problems(value: Mapping[str, str]) -> list[tuple[str, str]]:
    # env values take the harness's placeholders only: a pin naming a pin would need an order
    return env_names(value) + placeholder_problems(value, pins_allowed=False)


_BARE_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_FIELD_NAME = re.compile(r"^[^.\[\]!:{}]+$")  # a key of a corpus line: no attribute or index


def id_template(value: str) -> tuple[str, tuple[str, ...]]:
    """query.id_field as a str.format template over a corpus line's fields, and the fields it
    names in order: a bare name ("text", "title", "body") is that one field ("{text}"); a
    template joins several ("{title} {text}"). ValueError saying why `value` is neither."""
    if "{" not in value and "}" not in value:
        if not _BARE_FIELD.match(value):
            raise ValueError(
                f'{value!r} is not a field name; name one field ("text") or write a template '
                'over the corpus fields, e.g. "{title} {text}"'
            )
        value = "{" + value + "}"
    found, broken = format_fields(value)
    if broken:
        raise ValueError(broken)
    names = []
    for name, conv, spec in found:
        if not name or name.isdigit() or not _FIELD_NAME.match(name):
            raise ValueError(
                f"{{{name}}} is not a corpus field (the key of a corpus line, e.g. {{title}})"
            )
        if conv or spec:
            raise ValueError(f"{{{name}}} takes no !conversion or :format")
        names.append(name)
    if not names:
        raise ValueError('names no corpus field; e.g. "{title} {text}"')
    return value, tuple(dict.fromkeys(names))
