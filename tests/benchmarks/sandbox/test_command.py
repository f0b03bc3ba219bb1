"""How the entrypoint is started, the scrubbed environment, bubblewrap's view."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.lib.sandbox.capabilities import SANDBOX_TMP as INSIDE_TMP
from benchmarks.lib.sandbox.command import (
    BUNDLE_MOUNT,
    OUTPUT_MOUNT,
    TRACE_MOUNT,
    SandboxSetupError,
    bwrap_argv,
    entrypoint_argv,
    harness_env,
    userns_lock_argv,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("harness/run.sh", "#!/bin/sh\necho hi\n", ["/bin/sh", "harness/run.sh"]),
        ("harness/run.sh", "echo hi\n", ["/bin/sh", "harness/run.sh"]),
        ("run.py", "print(1)\n", ["python3", "./run.py"]),
        (
            "h/run",
            "#!/usr/bin/env -S python3 -u\n",
            ["/usr/bin/env", "-S python3 -u", "h/run"],
        ),
        ("h/run.sh", "#! /bin/bash -eu\n", ["/bin/bash", "-eu", "h/run.sh"]),
    ],
)
def test_entrypoint_runs_without_trusting_mode_bits(
    tmp_path: Path, name: str, text: str, expected: list[str]
) -> None:
    write(tmp_path / name, text).chmod(0o644)

    assert entrypoint_argv(tmp_path, name) == expected


@pytest.mark.parametrize(
    "entrypoint",
    [
        "",
        "/etc/passwd",
        "../outside.sh",
        "harness/../../outside.sh",
        "missing.sh",
        "harness",
        "harness\\run.sh",
        "a\x00b",
    ],
)
def test_entrypoint_outside_or_missing_is_refused(
    tmp_path: Path, entrypoint: str
) -> None:
    write(tmp_path / "harness" / "run.sh", "#!/bin/sh\n")
    write(tmp_path.parent / "outside.sh", "#!/bin/sh\n")

    with pytest.raises(SandboxSetupError):
        entrypoint_argv(tmp_path, entrypoint)


def test_entrypoint_through_a_link_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "real" / "run.sh", "#!/bin/sh\n")
    (tmp_path / "harness").symlink_to(tmp_path / "real")
    (tmp_path / "run.sh").symlink_to(tmp_path / "real" / "run.sh")

    for entrypoint in ("harness/run.sh", "run.sh"):
        with pytest.raises(SandboxSetupError, match="link"):
            entrypoint_argv(tmp_path, entrypoint)


def test_relative_interpreter_in_shebang_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "run.sh", "#!sh\n")

    with pytest.raises(SandboxSetupError, match="#!"):
        entrypoint_argv(tmp_path, "run.sh")


def test_env_is_built_from_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", "s3cret")

    env = harness_env(
        {"REPROGATE_RUN_ID": "7", "REPROGATE_OUTPUT_DIR": "/host/path"},
        home=INSIDE_TMP,
        tmp=INSIDE_TMP,
        output_dir=OUTPUT_MOUNT,
    )

    assert env == {
        "PATH": env["PATH"],
        "HOME": INSIDE_TMP,
        "TMPDIR": INSIDE_TMP,
        "LANG": "C.UTF-8",
        "REPROGATE_RUN_ID": "7",
        "REPROGATE_OUTPUT_DIR": OUTPUT_MOUNT,
    }
    assert "/usr/bin" in env["PATH"].split(":")


@pytest.mark.parametrize(
    "env", [{"BAD NAME": "x"}, {"1X": "x"}, {"A": "nul\x00"}, {"A": 3}, {"": "x"}]
)
def test_env_refuses_malformed_variables(env: dict[str, object]) -> None:
    with pytest.raises(SandboxSetupError):
        harness_env(env, home=INSIDE_TMP, tmp=INSIDE_TMP, output_dir="/o")  # type: ignore[arg-type]


def test_bwrap_view_binds_only_what_the_run_needs(tmp_path: Path) -> None:
    argv = bwrap_argv(
        "bwrap",
        bundle_dir=tmp_path / "b",
        output_dir=tmp_path / "o",
        network=False,
        tmp_bytes=1 << 20,
        user_namespace=False,
        drop_caps=False,
    )

    binds = [argv[i + 1 : i + 3] for i, a in enumerate(argv) if a.endswith("bind")]
    assert [str(tmp_path / "b"), BUNDLE_MOUNT] in binds
    assert [str(tmp_path / "o"), OUTPUT_MOUNT] in binds
    sources = {source for source, _ in binds}
    assert "/" not in sources
    assert "/root" not in sources
    assert "/work" not in sources
    assert "--unshare-net" in argv
    assert "--unshare-pid" in argv
    assert argv[argv.index("--chdir") + 1] == BUNDLE_MOUNT
    assert argv[-1] == "--"


def test_bwrap_view_with_network_keeps_it_and_resolv_conf(tmp_path: Path) -> None:
    argv = bwrap_argv(
        "bwrap",
        bundle_dir=tmp_path,
        output_dir=tmp_path,
        network=True,
        tmp_bytes=None,
        user_namespace=True,
        drop_caps=True,
    )

    assert "--unshare-net" not in argv
    assert "/etc/resolv.conf" in argv
    assert "--unshare-user" in argv
    assert "--size" not in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"


def test_bwrap_can_lock_user_namespaces_in_its_own(tmp_path: Path) -> None:
    argv = bwrap_argv(
        "bwrap",
        bundle_dir=tmp_path / "b",
        output_dir=tmp_path / "o",
        network=False,
        tmp_bytes=None,
        user_namespace=False,
        drop_caps=True,
        disable_userns=True,
    )

    options = argv[: argv.index("--chdir")]
    assert {"--unshare-user", "--disable-userns", "--cap-drop"} <= set(options)


def test_the_nested_bwrap_locks_user_namespaces_and_keeps_the_view() -> None:
    argv = userns_lock_argv("/usr/bin/bwrap")

    assert argv[0] == "/usr/bin/bwrap"
    assert {"--unshare-user", "--disable-userns", "--die-with-parent"} <= set(argv)
    assert argv[argv.index("--dev-bind") + 1 : argv.index("--dev-bind") + 3] == [
        "/",
        "/",
    ]
    assert argv[argv.index("--chdir") + 1] == BUNDLE_MOUNT
    assert argv[-1] == "--"


def test_the_trace_dir_is_bound_writable_and_named_in_the_env(tmp_path: Path) -> None:
    argv = bwrap_argv(
        "bwrap",
        bundle_dir=tmp_path / "b",
        output_dir=tmp_path / "o",
        network=False,
        tmp_bytes=None,
        user_namespace=False,
        drop_caps=True,
        trace_dir=tmp_path / "t",
    )
    env = harness_env(
        {"REPROGATE_TRACE_DIR": "/host/path"},
        home=INSIDE_TMP,
        tmp=INSIDE_TMP,
        output_dir=OUTPUT_MOUNT,
        trace_dir=TRACE_MOUNT,
    )

    binds = [argv[i : i + 3] for i, a in enumerate(argv) if a.endswith("bind")]
    assert ["--bind", str(tmp_path / "t"), TRACE_MOUNT] in binds
    assert env["REPROGATE_TRACE_DIR"] == TRACE_MOUNT


def test_without_a_trace_dir_the_harness_gets_no_trace_variable() -> None:
    env = harness_env(
        {"REPROGATE_TRACE_DIR": "/host/path"},
        home=INSIDE_TMP,
        tmp=INSIDE_TMP,
        output_dir=OUTPUT_MOUNT,
    )

    assert "REPROGATE_TRACE_DIR" not in env
