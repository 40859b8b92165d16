"""harness.boot.isolation without processes: the one allowlist and the one list of placeholders."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.boot.isolation import (
    MARKER_ENV,
    allowlisted_env,
    check_placeholders,
    expand_placeholders,
)
from harness.config import COMMAND_PLACEHOLDERS, ServiceConfig
from harness.errors import ConfigError

CALLER = {
    "PATH": "/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC", "PIP_INDEX_URL": "http://x",
    "HOME": "/root", "GITHUB_TOKEN": "secret", "LOCAL": "l",
}  # fmt: skip


def test_only_the_allowlist_comes_through_and_the_marker_only_with_a_run_id() -> None:
    env = allowlisted_env(CALLER, isolation={"HOME": "/iso"})
    assert env == {"PATH": "/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC", "HOME": "/iso"}
    marked = allowlisted_env(CALLER, isolation={}, pins={MARKER_ENV: "pinned"}, run_id="r1")
    assert marked[MARKER_ENV] == "r1"  # written last: a pin cannot take it over


def test_also_prefixes_lets_a_family_through_as_the_build_does_for_pip() -> None:
    env = allowlisted_env(CALLER, isolation={}, also_prefixes=("PIP_",))
    assert env["PIP_INDEX_URL"] == "http://x"
    assert "GITHUB_TOKEN" not in env and "LOCAL" not in env


def test_every_command_placeholder_of_the_config_is_known_to_the_service() -> None:
    start = " ".join(f"{{{name}}}" for name in sorted(COMMAND_PLACEHOLDERS))
    check_placeholders(ServiceConfig(start=start, ready="/health", data="data"))


@given(
    st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True).filter(
        lambda name: name not in COMMAND_PLACEHOLDERS
    )
)
def test_any_other_name_is_a_config_error_naming_it(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_placeholders(ServiceConfig(start=f"svc {{{name}}}", ready="/health"))
    assert f"start: unknown placeholder {{{name}}}" in str(caught.value)


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True).filter(
    lambda name: name not in COMMAND_PLACEHOLDERS  # the harness's own win: tested above
)


@given(NAMES)
def test_a_pinned_name_is_known_to_start_and_prepare_but_not_to_env_values(name: str) -> None:
    pinned = {name: "1"}
    check_placeholders(
        ServiceConfig(start=f"svc {{{name}}}", ready="/h", prepare=(f"p {{{name}}}",), env=pinned)
    )
    with pytest.raises(ConfigError) as caught:
        check_placeholders(
            ServiceConfig(start="svc", ready="/h", env={**pinned, "B": f"{{{name}}}"})
        )
    assert f"env.B: unknown placeholder {{{name}}}" in str(caught.value)
    assert "or pin" not in str(caught.value)


def test_an_unpinned_name_in_a_command_says_to_pin_it() -> None:
    with pytest.raises(ConfigError) as caught:
        check_placeholders(
            ServiceConfig(start="svc", ready="/h", prepare=("p {K}",), env={"J": "1"})
        )
    known = "{config_dir} {data} {home} {port} {python} {url} "
    assert f"prepare[0]: unknown placeholder {{K}}; known: {known}" in (
        str(caught.value)
    )
    assert "{worktree} {J}; or pin K in service.env" in str(caught.value)


def test_a_shell_parameter_expansion_says_to_double_its_braces() -> None:
    # `${XDG_CONFIG_HOME:-...}` reads as the placeholder {XDG_CONFIG_HOME} with a :format spec:
    # the message must say how a shell's braces are written, and the doubled form must expand
    # to exactly what the shell should see.
    env = {"CFG": "${XDG_CONFIG_HOME:-$HOME/.config}/svc"}
    with pytest.raises(ConfigError) as caught:
        check_placeholders(ServiceConfig(start="svc --port {port}", ready="/h", env=env))
    message = str(caught.value)
    assert "env.CFG: placeholder {XDG_CONFIG_HOME:-$HOME/.config} takes no" in message
    assert "${{XDG_CONFIG_HOME:-$HOME/.config}}" in message
    doubled = "${{XDG_CONFIG_HOME:-$HOME/.config}}/svc"
    check_placeholders(ServiceConfig(start="svc --port {port}", ready="/h", env={"CFG": doubled}))
    assert expand_placeholders(doubled, {}, key="env.CFG") == env["CFG"]
    with pytest.raises(ConfigError) as caught:
        check_placeholders(ServiceConfig(start="svc {port}", ready="/h", env={"D": "${HOME}/x"}))
    assert "env.D: unknown placeholder {HOME}" in str(caught.value)
    assert "write {{ and }} for literal braces (a shell's ${X} is ${{X}})" in str(caught.value)
