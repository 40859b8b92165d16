"""One error hierarchy for everything the harness reports to a user.

    HarnessError                 exit status 2 unless a subclass says otherwise
    ├── GoldError                the gold set is malformed or does not match its corpus
    ├── ConfigError              harness.toml / [tool.harness] is malformed
    ├── RefError                 a git ref cannot be resolved or checked out
    ├── BuildError               the service's build command failed (exit 3: could not measure)
    ├── ServiceError             the service would not boot, get ready, or answer
    ├── AdapterError             it answers, but query.ids reads no document id (exit 3)
    ├── ResultsError             a run record or comparison on disk is unreadable
    └── NotComparableError       two runs differ in something that makes them incomparable

Anything that is not a HarnessError is a bug in the harness and keeps its traceback.
Validation collects every problem in a file first, then raises once with all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SHOWN_CHARS = 200
"""At most this many characters of a value the user gave are echoed in a message."""


def clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` whole when it is short, else its first `limit` characters and how many more: a
    20 MB gold line or option value is never echoed whole."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, located as precisely as we can."""

    path: str
    message: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f": {self.field}"
        # A message quotes what it found; a huge value stays cut to a readable line.
        return f"{where}: {clip(self.message, 2 * SHOWN_CHARS)}"


class HarnessError(Exception):
    """Root of every error the CLI turns into `harness: error: ...` and an exit status."""

    exit_status = 2

    def __init__(self, message: str, details: Sequence[str] = ()) -> None:
        message = clip(message, 5 * SHOWN_CHARS)
        super().__init__(message)
        self.message = message
        self.details: tuple[str, ...] = tuple(details)

    def __str__(self) -> str:
        return "\n".join([self.message, *self.details])

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt whole in another process (a Ray worker's error on the driver): the message,
        # its details and every field of a subclass, whatever its __init__ takes.
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[HarnessError], args: tuple[Any, ...], state: dict[str, Any]) -> HarnessError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class _ProblemsError(HarnessError):
    """An error that carries every problem found in one input, not just the first."""

    shown = 50  # a wrong corpus can yield thousands; the first lines say enough

    def __init__(self, message: str, problems: Iterable[Problem] = (), hint: str = "") -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        details = [f"  {p}" for p in self.problems[: self.shown]]
        if len(self.problems) > self.shown:
            details.append(f"  ... and {len(self.problems) - self.shown} more problems")
        if hint:
            details.append(hint)
        super().__init__(message, details)


class GoldError(_ProblemsError):
    """The gold set (or its corpus) is malformed; every problem found is listed."""


class ConfigError(_ProblemsError):
    """The harness configuration is malformed; every problem found is listed."""


class RefError(HarnessError):
    """A git ref cannot be resolved, or a worktree cannot be made for it."""


class BuildError(HarnessError):
    """The build command of a ref failed: like a service that crashed, the ref could not be
    measured, so the outcome is invalid (exit 3), not a usage error. The runner records it in
    the run (`RunFailure("build", ...)`); the status holds wherever else it surfaces."""

    exit_status = 3


class ServiceError(HarnessError):
    """The service exited at boot, never got ready, failed to prepare, or would not die.

    `stage` says which ("boot", "ready", "prepare", "teardown") for the run record.
    """

    def __init__(self, message: str, details: Sequence[str] = (), stage: str = "boot") -> None:
        super().__init__(message, details)
        self.stage = stage


class AdapterError(HarnessError):
    """The service answers, but what the config reads from its answers is wrong: the ids path
    matches nothing, or no returned id is a document the gold set or corpus knows.  Found in the
    first answers of the first boot, before the rest of the run; nothing was measured (exit 3)."""

    exit_status = 3


class ResultsError(HarnessError):
    """A run record or a saved comparison cannot be read or written."""

    reason: str = ""  # the system's words, when a failed write caused it ("Permission denied")


def require_schema(
    document: Mapping[str, Any],
    source: str,
    *,
    schema: str,
    version: int,
    what: str,
    wrong_hint: Sequence[str] = (),
    version_hint: Sequence[str] = (),
) -> None:
    """Raise ResultsError unless `document` says it is `schema` at `version`: every versioned
    file the harness reads back (run records, comparisons, gate baselines) is checked here."""
    if document.get("schema") != schema:
        raise ResultsError(
            f"{source}: not a harness {what} (schema {document.get('schema')!r})", wrong_hint
        )
    if document.get("schema_version") != version:
        raise ResultsError(
            f"{source}: {what} schema_version {document.get('schema_version')!r}, "
            f"this harness reads {version}",
            version_hint,
        )


class NotComparableError(HarnessError):
    """Two runs differ in an input that makes comparing them meaningless."""
