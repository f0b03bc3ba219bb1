"""The embedded runtime's supervisor (config/supervise.py) with stand-in programs:
restarts with back-off (the web server's too), each program's log file, the
ready line, the status file (skipped on a full disk), and a stop that leaves no
process behind, however stubborn."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from accounts.lib.runtime import STATUS_FILE
from config import supervise
from config.supervise import (
    Program,
    Supervisor,
    backoff,
    describe_exit,
    last_line,
    link_host,
)

PROJECT_DIR = Path(__file__).resolve().parents[2]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


def _wait_until(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def lines() -> list[str]:
    return []


@pytest.fixture
def supervisor(tmp_path: Path, lines: list[str]) -> Iterator[Supervisor]:
    sup = Supervisor(
        [Program("web", SLEEPER), Program("worker", SLEEPER)],
        status_path=tmp_path / "supervisor.json",
        stop_grace_s=2.0,
        say=lines.append,
    )
    for program in sup.programs:
        sup._start(program)
    lines.clear()  # the start lines
    yield sup
    sup.stop()


def _program(sup: Supervisor, name: str) -> Program:
    return next(p for p in sup.programs if p.name == name)


@pytest.mark.parametrize(
    ("failures", "seconds"),
    [(0, 1.0), (1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 30.0), (60, 30.0)],
)
def test_backoff_doubles_up_to_thirty_seconds(failures: int, seconds: float) -> None:
    assert backoff(failures) == seconds


@pytest.mark.parametrize(
    ("code", "text"),
    [(1, "exited with 1"), (0, "exited with 0"), (-9, "was killed by SIGKILL")],
)
def test_describe_exit(code: int, text: str) -> None:
    assert describe_exit(code) == text


@pytest.mark.timeout(30)
def test_a_killed_worker_is_restarted_with_back_off_and_the_web_untouched(
    supervisor: Supervisor, lines: list[str]
) -> None:
    worker, web = _program(supervisor, "worker"), _program(supervisor, "web")
    web_pid = web.process.pid

    first_pid = worker.process.pid
    os.kill(first_pid, signal.SIGKILL)
    assert _wait_until(supervisor.step, 5)
    supervisor.write_status()
    status = json.loads(supervisor.status_path.read_text())

    assert lines == ["==> worker was killed by SIGKILL; restarting in 1 s"]
    assert status["programs"]["worker"]["state"] == "restarting"
    assert status["programs"]["worker"]["last_exit"]["code"] == -9
    assert status["programs"]["web"] == {
        "state": "running",
        "pid": web_pid,
        "restarts": 0,
        "last_exit": None,
    }

    killed_at = time.monotonic()
    assert _wait_until(supervisor.step, 5)  # started again
    assert 0.9 <= time.monotonic() - killed_at <= 2.0
    second_pid = worker.process.pid
    assert second_pid != first_pid
    assert worker.state == "running"
    assert worker.restarts == 1

    os.kill(second_pid, signal.SIGKILL)  # a second quick death: 2 s
    assert _wait_until(supervisor.step, 5)
    assert lines[-2:] == [
        f"==> worker started again (restart 1; pid {second_pid})",
        "==> worker was killed by SIGKILL; restarting in 2 s",
    ]
    assert web.process.pid == web_pid
    assert web.process.poll() is None


def test_a_worker_that_stayed_up_starts_again_after_one_second(
    supervisor: Supervisor, lines: list[str]
) -> None:
    worker = _program(supervisor, "worker")
    worker.failures_in_a_row = 5  # it had been crashing ...
    worker.started_at -= supervise.STABLE_AFTER_S  # ... then ran for a minute

    worker.process.kill()
    assert _wait_until(supervisor.step, 5)

    assert lines == ["==> worker was killed by SIGKILL; restarting in 1 s"]


@pytest.mark.timeout(30)
def test_a_killed_web_server_is_restarted_like_a_worker(
    supervisor: Supervisor, lines: list[str]
) -> None:
    web, worker = _program(supervisor, "web"), _program(supervisor, "worker")
    first_pid, worker_pid = web.process.pid, worker.process.pid

    os.kill(first_pid, signal.SIGKILL)
    assert _wait_until(supervisor.step, 5)
    assert _wait_until(supervisor.step, 5)  # started again

    assert not supervisor._stopping
    assert web.state == "running"
    assert web.process.pid != first_pid
    assert (web.restarts, web.last_exit["code"]) == (1, -9)
    assert lines == [
        "==> web was killed by SIGKILL; restarting in 1 s",
        f"==> web started again (restart 1; pid {web.process.pid})",
    ]
    assert worker.process.pid == worker_pid


def test_a_program_writes_to_its_log_and_its_exit_names_the_last_line(
    tmp_path: Path, lines: list[str]
) -> None:
    log = tmp_path / "logs" / "web.log"
    argv = [sys.executable, "-c", "print('starting'); raise SystemExit('port busy')"]
    sup = Supervisor(
        [Program("web", argv, log=log)],
        status_path=tmp_path / "supervisor.json",
        say=lines.append,
    )
    sup._start(sup.programs[0])
    try:
        assert _wait_until(sup.step, 10)
    finally:
        sup.stop()

    assert log.read_text() == "starting\nport busy\n"
    pid = sup.programs[0].process.pid
    assert lines == [
        f"==> web started (pid {pid}; log: {log})",
        "==> web exited with 1; restarting in 1 s (its log's last line: port busy)",
    ]


def test_a_large_log_is_kept_once_and_a_new_one_begun(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_bytes(b"old\n" * (supervise.LOG_ROTATE_BYTES // 4 + 1))
    sup = Supervisor(
        [Program("worker", [sys.executable, "-c", "print('new')"], log=log)],
        status_path=tmp_path / "supervisor.json",
        say=lambda line: None,
    )

    sup._start(sup.programs[0])
    sup.programs[0].process.wait(timeout=10)

    assert log.read_text() == "new\n"
    assert (tmp_path / "worker.log.1").stat().st_size > supervise.LOG_ROTATE_BYTES
    assert last_line(log) == "new"
    assert last_line(tmp_path / "absent.log") == ""


def test_a_status_file_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    sup = Supervisor([], status_path=blocker / "supervisor.json")

    assert sup.write_status() is False
    assert list(tmp_path.iterdir()) == [blocker]


def test_the_ready_line_comes_once_when_the_web_answers(
    tmp_path: Path, lines: list[str]
) -> None:
    sup = Supervisor(
        [],
        status_path=tmp_path / "s.json",
        say=lines.append,
        ready_url="http://127.0.0.1:1/healthz",  # nothing answers there
        ready_line="==> ready",
    )

    sup.probe_ready()
    assert lines == []

    sup.ready_url = f"file://{tmp_path / 's.json'}"  # answers once it exists
    sup.write_status()
    sup.probe_ready()
    sup.probe_ready()
    assert lines == ["==> ready"]


def test_an_embedded_database_is_held_open_once_it_exists(tmp_path: Path) -> None:
    database = tmp_path / "a var dir #1?" / "db.sqlite3"  # URI characters too
    database.parent.mkdir()
    hold = supervise.SqliteHold([database])
    hold.poll()
    assert hold.connections == {}
    with contextlib.closing(sqlite3.connect(database)) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("CREATE TABLE t (x)")

    hold.poll()

    # WAL's shared-memory file, which a reader needs, outlives other connections
    assert set(hold.connections) == {database}
    assert database.with_name("db.sqlite3-shm").stat().st_size == 32768
    with contextlib.closing(sqlite3.connect(database)) as connection:
        connection.execute("INSERT INTO t VALUES (1)")
        connection.commit()
    assert database.with_name("db.sqlite3-shm").exists()
    hold.close()
    assert not database.with_name("db.sqlite3-shm").exists()


def test_only_the_embedded_default_databases_are_held(tmp_path: Path) -> None:
    both = supervise.embedded_databases(tmp_path, {})
    production = {"DATABASE_URL": "postgres://db/x", "CELERY_BROKER_URL": "redis://r"}

    assert both == [tmp_path / "db.sqlite3", tmp_path / "broker" / "broker.sqlite3"]
    assert supervise.embedded_databases(tmp_path, production) == []


@pytest.mark.parametrize(
    ("host", "link"),
    [("0.0.0.0", "127.0.0.1"), ("::", "[::1]"), ("::1", "[::1]"), ("h", "h")],  # noqa: S104
)
def test_the_ready_line_names_an_address_a_browser_opens(host: str, link: str) -> None:
    assert link_host(host) == link


def test_the_orphans_of_a_dead_worker_are_killed_with_it(
    tmp_path: Path, lines: list[str]
) -> None:
    child_pid_file = tmp_path / "child.pid"
    parent = textwrap.dedent(
        f"""
        import subprocess, sys, time
        child = subprocess.Popen({SLEEPER!r})
        open({str(child_pid_file)!r}, "w").write(str(child.pid))
        time.sleep(300)
        """
    )
    sup = Supervisor(
        [Program("worker", [sys.executable, "-c", parent])],
        status_path=tmp_path / "supervisor.json",
        say=lines.append,
    )
    sup._start(sup.programs[0])
    try:
        assert _wait_until(lambda: child_pid_file.is_file(), 10)
        time.sleep(0.1)
        child_pid = int(child_pid_file.read_text())

        os.kill(sup.programs[0].process.pid, signal.SIGKILL)  # the leader only
        assert _wait_until(sup.step, 5)

        assert _wait_until(lambda: not _alive(child_pid), 5)
    finally:
        sup.stop()


def test_the_lab_agent_is_stopped_while_the_web_server_still_answers(
    tmp_path: Path, lines: list[str]
) -> None:
    """The agent's last call (``bye``) goes to the web server: the web server
    gets its SIGTERM only once the agent is gone (or half the grace passed)."""
    order = tmp_path / "order"
    recorder = textwrap.dedent(
        f"""
        import signal, sys, time
        def stop(*_):
            with open({str(order)!r}, "a") as f:
                f.write(sys.argv[1] + " " + str(time.monotonic()) + "\\n")
            time.sleep(0.3)  # a last call
            sys.exit(0)
        signal.signal(signal.SIGTERM, stop)
        time.sleep(300)
        """
    )
    argv = [sys.executable, "-c", recorder]
    sup = Supervisor(
        [
            Program("web", [*argv, "web"]),
            Program("lab-agent", [*argv, "lab-agent"], stop_first=True),
        ],
        status_path=tmp_path / "supervisor.json",
        stop_grace_s=4.0,
        say=lines.append,
    )
    for program in sup.programs:
        sup._start(program)
    time.sleep(0.5)  # both have set their handler

    sup.stop()

    stops = [line.split() for line in order.read_text().splitlines()]
    assert [name for name, _ in stops] == ["lab-agent", "web"]
    assert float(stops[1][1]) - float(stops[0][1]) >= 0.3
    assert not any("killing" in line for line in lines)


STUBBORN = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "time.sleep(300)"])
    print(child.pid, flush=True)
    time.sleep(300)
    """
)


@pytest.mark.timeout(60)
def test_sigint_stops_every_process_within_the_grace_even_one_ignoring_sigterm(
    tmp_path: Path,
) -> None:
    """A supervisor process, as scripts/run runs it, with a web stand-in that
    stops on SIGTERM and a worker stand-in that ignores it, with a child."""
    status = tmp_path / "supervisor.json"
    pids = tmp_path / "pids"
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from config.supervise import Program, Supervisor
        sup = Supervisor(
            [Program("web", {SLEEPER!r}),
             Program("worker", [sys.executable, "-c", {STUBBORN!r}])],
            status_path=Path({str(status)!r}), stop_grace_s=3.0)
        sys.exit(sup.run())
        """
    )
    with pids.open("w") as out:
        runner = subprocess.Popen(
            [sys.executable, "-c", script], cwd=PROJECT_DIR, stdout=out
        )
    try:

        def child() -> list[str]:
            """The stubborn worker's child's pid, among the supervisor's lines."""
            return [word for word in pids.read_text().split() if word.isdigit()]

        assert _wait_until(child, 20)
        assert _wait_until(status.is_file, 5)
        programs = json.loads(status.read_text())["programs"]
        children = [entry["pid"] for entry in programs.values()]
        children.append(int(child()[-1]))
        assert all(_alive(pid) for pid in children)

        started = time.monotonic()
        runner.send_signal(signal.SIGINT)
        runner.wait(timeout=15)
        elapsed = time.monotonic() - started

        assert elapsed < 3.0 + 2.0
        assert [pid for pid in children if _alive(pid)] == []
        assert not status.exists()
        said = pids.read_text()
        assert "==> worker was still busy after 3 s; stopping it now" in said
        assert "web was still busy" not in said  # it stopped on SIGTERM
    finally:
        if runner.poll() is None:
            runner.kill()


def test_the_lab_pool_is_served_by_the_agent_against_the_server_on_loopback(
    tmp_path: Path,
) -> None:
    programs = {p.name: p for p in supervise.embedded_programs("h", 8130, tmp_path)}

    assert set(programs) == {"web", "worker", "lab-agent", "beat"}
    assert {p.log for p in programs.values()} == {
        tmp_path / "logs" / f"{name}.log" for name in programs
    }
    agent, default = programs["lab-agent"], programs["worker"].argv
    assert agent.argv == [sys.executable, "-m", "reprogate_agent"]
    assert agent.env is not None
    assert agent.env["REPROGATE_SERVER_URL"] == "http://h:8130"
    token_file = tmp_path / "lab-agent" / "host-token"
    assert agent.env["REPROGATE_HOST_TOKEN_FILE"] == str(token_file)
    assert "REPROGATE_HOST_TOKEN" not in agent.env  # never the token itself
    assert agent.env["REPROGATE_BROKER_URL"] == (
        f"sqla+sqlite:///{tmp_path / 'broker' / 'broker.sqlite3'}"
    )
    assert agent.env["REPROGATE_AGENT_NAME"] == "embedded-lab"
    assert not any("pool.local" in arg for arg in default)
    assert "--queues=celery" in default
    assert "--beat" not in default  # beat is a process of its own
    assert programs["web"].argv[-1] == "h:8130"
    assert f"--schedule={tmp_path / 'celerybeat-schedule'}" in programs["beat"].argv


def test_the_agent_reaches_a_server_bound_to_every_interface_on_loopback(
    tmp_path: Path,
) -> None:
    env = {"CELERY_BROKER_URL": "redis://127.0.0.1:6379/3", "RUNNER_WORK_DIR": "/w"}

    agent = supervise.agent_environment("0.0.0.0", 8151, tmp_path, env)  # noqa: S104

    assert agent["REPROGATE_SERVER_URL"] == "http://127.0.0.1:8151"
    assert agent["REPROGATE_BROKER_URL"] == "redis://127.0.0.1:6379/3"
    assert agent["REPROGATE_AGENT_WORK_DIR"] == "/w"
    from_file = supervise.agent_environment(
        "127.0.0.1", 8151, tmp_path, {"CELERY_BROKER_URL_FILE": "/run/broker"}
    )
    assert from_file["REPROGATE_BROKER_URL_FILE"] == "/run/broker"
    assert "REPROGATE_BROKER_URL" not in from_file


def test_the_agent_gets_none_of_the_server_s_secrets(tmp_path: Path) -> None:
    sup = Supervisor(
        [],
        status_path=tmp_path / "s.json",
        env={
            "PATH": "/usr/bin",
            "LC_ALL": "C.UTF-8",
            "DJANGO_SECRET_KEY": "s3cret",
            "DATABASE_URL": "postgresql://u:p@db/x",
            "CELERY_BROKER_URL": "redis://u:p@b/0",
        },
    )
    agent = supervise.embedded_programs("127.0.0.1", 8130, tmp_path, sup.env)[2]

    env = sup._environment(agent)

    assert env["PATH"] == "/usr/bin"
    assert env["LC_ALL"] == "C.UTF-8"
    assert "DJANGO_SECRET_KEY" not in env
    assert "DATABASE_URL" not in env
    assert env["REPROGATE_BROKER_URL"] == "redis://u:p@b/0"  # its own broker, named
    assert "CELERY_BROKER_URL" not in env
    assert supervise.ROOT_WARNING_FILTER in env["PYTHONWARNINGS"]
    assert "DJANGO_SECRET_KEY" in sup._environment(
        supervise.embedded_programs("127.0.0.1", 8130, tmp_path)[0]
    )


def test_the_embedded_processes_filter_celerys_root_warning_only(
    tmp_path: Path,
) -> None:
    sup = Supervisor(
        [], status_path=tmp_path / "s.json", env={"PYTHONWARNINGS": "error::Warning"}
    )

    env = sup._environment()

    filters = env["PYTHONWARNINGS"].split(",")
    assert filters[0] == "error::Warning"  # the user's own filters stay
    assert filters[1] == supervise.ROOT_WARNING_FILTER
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import warnings\n"
            'warnings.warn("You\'re running the worker with superuser privileges: x")\n'
            "warnings.warn('another warning')\n",
        ],
        env={**env, "PYTHONWARNINGS": supervise.ROOT_WARNING_FILTER},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "superuser" not in probe.stderr
    assert "another warning" in probe.stderr


def test_the_operations_guide_states_the_supervisors_figures() -> None:
    guide = (PROJECT_DIR / "docs" / "operations.md").read_text(encoding="utf-8")
    section = guide.split("## The embedded runtime (`scripts/run`)", 1)[1]
    rotate_mib = supervise.LOG_ROTATE_BYTES // (1024 * 1024)

    for figure in (
        f"after {supervise.BACKOFF_FIRST_S:g} s, then 2 s, 4 s, … up to "
        f"{supervise.BACKOFF_MAX_S:g} s",
        f"SIGKILL for what is left after {supervise.STOP_GRACE_S:g} s",
        f"a log over {rotate_mib} MiB",
        f"`$REPROGATE_VAR_DIR/{STATUS_FILE}`",
        f"`$REPROGATE_VAR_DIR/{supervise.LOGS_DIR}/<process>.log`",
        "`REPROGATE_MIN_FREE_DISK_MB` (default 100)",
    ):
        assert figure in " ".join(section.split()), figure
    for name in ("web", "worker", "lab-agent", "beat"):
        assert f"`{name}`" in section


def test_scripts_run_names_every_demo_account_when_ready() -> None:
    from portal.demo import ACCOUNTS, DEMO_PASSWORD

    script = (PROJECT_DIR / "scripts" / "run").read_text(encoding="utf-8")
    note = script.split("--ready-note", 1)[1].splitlines()[0]

    names = [username for username, _org, _role in ACCOUNTS]
    assert f"{', '.join(names[:-1])} or {names[-1]}" in note
    assert f"(password {DEMO_PASSWORD})" in note


def test_the_agent_keeps_its_host_key_and_reads_the_demo_s_cdi_spec_in_the_var_dir(
    tmp_path: Path,
) -> None:
    plain = supervise.agent_environment("127.0.0.1", 8151, tmp_path, {})
    lab = supervise.agent_environment(
        "127.0.0.1", 8151, tmp_path, {"REPROGATE_CDI_DIRS": "/srv/cdi"}
    )

    assert plain["REPROGATE_AGENT_STATE_DIR"] == str(tmp_path / "lab-agent" / "state")
    assert plain["REPROGATE_CDI_DIRS"] == f"/etc/cdi:/var/run/cdi:{tmp_path}/lab/cdi"
    assert lab["REPROGATE_CDI_DIRS"] == f"/srv/cdi:{tmp_path}/lab/cdi"  # ours last


def test_the_token_command_is_told_whether_the_scratch_device_is_there(
    tmp_path: Path,
) -> None:
    with_device = supervise.agent_token_argv(tmp_path, scratch=True)

    assert with_device[-1] == "--scratch-device=reprogate.dev/block=scratch0"
    assert not any(
        a.startswith("--scratch") for a in supervise.agent_token_argv(tmp_path)
    )
