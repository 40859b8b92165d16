"""[judge] of harness.toml, read on its own: `harness judge label` needs its command and nothing
else (no service, no repository), so a configuration without [service] still gives it.

    judge_command(path=None, cwd=None) -> str | None

`command` is one string, split with shlex (checked here: an unclosed quote or an empty command is
a ConfigError at its file:line). Discovery as `load_config`: `path` given (relative to `cwd`),
else harness.toml in `cwd`, else pyproject.toml's [tool.harness]; no configuration at all gives
None (the caller then asks for --command).
"""

from __future__ import annotations

from pathlib import Path

from harness.config.reader import Reader, parse_toml, read_text
from harness.config.schema import SECTIONS
from harness.errors import ConfigError


def _found(cwd: Path) -> tuple[Path, bool] | None:
    """(config file, in pyproject.toml) in `cwd`, or None."""
    if (cwd / "harness.toml").is_file():
        return cwd / "harness.toml", False
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        tool = parse_toml(pyproject, read_text(pyproject)).get("tool", {})
        if isinstance(tool, dict) and "harness" in tool:
            return pyproject, True
    return None


def judge_command(path: Path | None = None, cwd: Path | None = None) -> str | None:
    """[judge].command of the configuration (see the module docstring), None when unset."""
    cwd = (cwd or Path.cwd()).resolve()
    if path is None:
        found = _found(cwd)
        if found is None:
            return None
        path, in_pyproject = found
    else:
        path = (cwd / path).resolve()
        in_pyproject = path.name == "pyproject.toml"
    text = read_text(path, "--config")
    doc: object = parse_toml(path, text)
    if in_pyproject:
        tool = doc.get("tool", {}) if isinstance(doc, dict) else None
        doc = tool.get("harness") if isinstance(tool, dict) else None
    if not isinstance(doc, dict) or "judge" not in doc:
        return None
    reader = Reader(path, text, "tool.harness." if in_pyproject else "")
    read = reader.section(reader.table(doc["judge"], "judge"), SECTIONS["judge"], "judge")
    if reader.problems:
        count = len(reader.problems)
        raise ConfigError(f"{path}: invalid [judge] ({count} problem{'s' * (count != 1)})",
                          reader.problems)
    command = read.values.get("command")
    return command if isinstance(command, str) else None
