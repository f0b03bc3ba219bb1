"""A production-shaped ReproGate on loopback, without containers.

Every part is the real program: a PostgreSQL server and database of the stack's
own (initdb, password authentication only, removed afterwards), a RabbitMQ
virtual host with a user for the server and one per lab pool
(deploy/rabbitmq's scripts, ``rabbitmqctl``; deleted afterwards),
moto's S3 server, ``manage.py migrate`` and ``collectstatic``, gunicorn
(deploy/gunicorn.conf.py) behind nginx with TLS on loopback (a self-signed
certificate made here), Celery beat and the default worker. The server's
processes get production settings built from nothing but PATH, HOME and LANG:
DEBUG off, a generated secret, keys and files in the stack's folder, S3 storage.

The lab side (the runner agents) is started by the test with
``Stack.start_process``; ``Stack.manage`` runs a management command as the
server's operator would, ``Stack.api`` talks HTTPS to nginx."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import re
import secrets
import shutil
import ssl
import string
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from benchmarks.lib.queues import pool_permission
from tests import processes
from tests.processes import PROJECT_DIR

BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
START_TIMEOUT_S = 60.0
COMMAND_TIMEOUT_S = 180.0
NGINX_TEMPLATE = PROJECT_DIR / "deploy" / "nginx" / "reprogate.conf.template"
SELFSIGNED = PROJECT_DIR / "deploy" / "nginx" / "selfsigned.py"
RABBITMQ_SCRIPTS = PROJECT_DIR / "deploy" / "rabbitmq"
BUCKET = "reprogate-smoke"
S3_KEY, S3_SECRET, S3_REGION = "smoke-access", "smoke-secret", "us-east-1"
# collectstatic as deployed, except that whitenoise makes no brotli copies: nginx
# serves the gzip ones (gzip_static; Debian's nginx has no brotli module), and
# brotli's quality 11 takes minutes for plotly.js and the API docs' bundles on a
# busy CI machine (gzip alone: seconds).
COLLECTSTATIC = [
    sys.executable,
    "-c",
    "import sys; sys.modules['brotli'] = None; "
    "from django.core.management import execute_from_command_line; "
    "execute_from_command_line("
    "['manage.py', 'collectstatic', '--no-input', '-v', '0'])",
]
# What a process needs of the outer environment; everything else is set here.
BASE_VARIABLES = ("PATH", "HOME", "LANG")


class StackError(Exception):
    """A part of the stack did not start; the message holds its output."""


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def base_env() -> dict[str, str]:
    """PATH, HOME and LANG of this process, nothing else."""
    env = {name: os.environ[name] for name in BASE_VARIABLES if name in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    return env


def wait_for(
    condition: Callable[[], Any],
    timeout: float,
    explain: Callable[[], str] = lambda: "",
    step: float = 0.1,
) -> Any:
    """The first true value of ``condition()`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise StackError(f"not within {timeout:.0f} s: {explain()}")
        time.sleep(step)


class Process(processes.Process):
    """A program of the stack (``tests.processes``), awaited by its output."""

    def wait_output(self, needle: str, timeout: float = START_TIMEOUT_S) -> None:
        wait_for(
            lambda: needle in self.text() or not self.alive(),
            timeout,
            self.tail,
        )
        if needle not in self.text():
            raise StackError(f"{self.name} exited:\n{self.tail()}")


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


def _password(length: int = 24) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def rabbitmqctl(*args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["rabbitmqctl", *args], capture_output=True, text=True, timeout=60, check=False
    )
    if check and done.returncode != 0:
        raise StackError(f"rabbitmqctl {args[0]} failed: {done.stdout}{done.stderr}")
    return done.stdout


class PrivateCluster:
    """``initdb`` into a new folder with password authentication only (SCRAM, for the
    socket too), started on a free loopback port; as root it runs as the
    ``postgres`` user, which initdb requires."""

    def __init__(self) -> None:
        # Not under pytest's folders: the postgres user must reach it.
        root = Path(tempfile.mkdtemp(prefix="reprogate-smoke-pg-"))
        self.root, self.port, self.password = root, free_port(), _password()
        self.data, self.log = root / "data", root / "server.log"
        self.as_user: list[str] = []
        self.bin = _postgres_binaries()
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise StackError("as root, initdb needs a postgres user") from None
            os.chown(root, owner.pw_uid, owner.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            [*self.as_user, *argv], capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise StackError(f"{argv[0]}: {done.stdout}{done.stderr}")

    def start(self) -> None:
        secret = self.root / "password"
        secret.write_text(self.password + "\n")
        if self.as_user:
            owner = pwd.getpwnam("postgres")
            os.chown(secret, owner.pw_uid, owner.pw_gid)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=scram-sha-256", f"--pwfile={secret}", "--no-sync", "-E", "UTF8",
        )  # fmt: skip
        secret.unlink()
        options = f"-p {self.port} -k {self.root} -c listen_addresses={HOST}"
        options += " -c fsync=off -c full_page_writes=off"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def sql(self, statement: str) -> None:
        with psycopg.connect(
            host=HOST,
            port=self.port,
            user="postgres",
            password=self.password,
            dbname="postgres",
            autocommit=True,
        ) as admin:
            admin.execute(statement)  # names made here, never input

    def stop(self) -> None:
        if self.data.is_dir():
            with contextlib.suppress(StackError):
                self._run(
                    str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"
                )
        shutil.rmtree(self.root, ignore_errors=True)


def _postgres_binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl is None:
        raise StackError("no PostgreSQL server binaries (initdb, pg_ctl)")
    return Path(pg_ctl).parent


@dataclass
class Stack:
    """The stack in folder ``root``."""

    root: Path
    suffix: str = field(default_factory=lambda: secrets.token_hex(4))
    processes: list[Process] = field(default_factory=list)
    cleanups: list[Callable[[], object]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    https_port: int = 0
    web_port: int = 0
    http_port: int = 0
    s3_endpoint: str = ""
    vhost: str = ""
    database_url: str = ""
    database: PrivateCluster | None = None
    database_name: str = ""
    broker_users: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    # --- paths --------------------------------------------------------------------
    @property
    def var(self) -> Path:
        return self.root / "var"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def ca_file(self) -> Path:
        return self.root / "tls" / "tls.crt"

    @property
    def key_file(self) -> Path:
        return self.root / "tls" / "tls.key"

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.https_port}"

    # --- start and stop -------------------------------------------------------------
    def start(self) -> None:
        for folder in (self.logs, self.root / "tls", self.var / "spool"):
            folder.mkdir(parents=True, exist_ok=True)
        (self.var / "work").mkdir()
        self.https_port, self.web_port = free_port(), free_port()
        self.http_port = free_port()
        self._step("database", self._database)
        # Every address and credential is chosen first, so that migrate and
        # collectstatic run while the broker, S3 and the certificate are made
        # (2 cores in CI).
        self.vhost = f"reprogate-smoke-{self.suffix}"
        server_user = (f"server-{self.suffix}", _password())
        self.broker_users["server"] = self._amqp(*server_user)
        self.s3_endpoint = f"http://{HOST}:{free_port()}"
        self.env = self._server_env()
        manage = [sys.executable, "manage.py"]
        migrate = self.start_process("migrate", [*manage, "migrate", "--no-input"])
        static = self.start_process("collectstatic", COLLECTSTATIC)
        self._step("broker", lambda: self._broker(*server_user))
        self._step("s3", self._s3)
        self._step("certificate", self._certificate)
        self._step("migrate", lambda: _finished(migrate, COMMAND_TIMEOUT_S))
        self._step("collectstatic", lambda: _finished(static, COMMAND_TIMEOUT_S))
        web, beat, worker = self._web(), self._beat(), self._worker()
        self._step("web", lambda: self._wait_web(web))
        self._step("nginx", self._nginx)
        self._step("beat", lambda: beat.wait_output("beat: Starting"))
        self._step("worker", lambda: worker.wait_output(" ready."))

    def _step(self, name: str, action: Callable[[], object]) -> None:
        started = time.monotonic()
        action()
        self.timings[name] = round(time.monotonic() - started, 2)

    def _beat(self) -> Process:
        beat = [str(BIN / "celery"), "-A", "config", "beat", "-l", "INFO"]
        beat += [f"--schedule={self.var / 'beat-schedule'}", "--pidfile="]
        return self.start_process("beat", beat)

    def _worker(self) -> Process:
        worker = [str(BIN / "celery"), "-A", "config", "worker", "-Q", "celery"]
        worker += ["-n", f"default-{self.suffix}@%h", "--concurrency", "2"]
        worker += ["--without-gossip", "--without-mingle", "-l", "INFO"]
        return self.start_process("worker", worker)

    def stop(self) -> None:
        """Every process asked to stop at once (SIGTERM), then waited for."""
        for process in reversed(self.processes):
            process.terminate()
        deadline = time.monotonic() + 20
        for process in reversed(self.processes):
            started = time.monotonic()
            process.stop(timeout=max(0.1, deadline - time.monotonic()))
            self.timings[f"stop {process.name}"] = round(time.monotonic() - started, 2)
        started = time.monotonic()
        for cleanup in reversed(self.cleanups):
            with contextlib.suppress(Exception):
                cleanup()
        self.timings["cleanups"] = round(time.monotonic() - started, 2)

    def tails(self) -> str:
        return "\n".join(process.tail(2000) for process in self.processes)

    # --- parts ----------------------------------------------------------------------
    def _database(self) -> None:
        """A PostgreSQL server of the stack's own that asks every client for its
        password (SCRAM), so that "no credential" means refused; the server's
        processes connect with the one in DATABASE_URL."""
        self.database = PrivateCluster()
        self.cleanups.append(self.database.stop)
        self.database.start()
        self.database_name = name = f"reprogate_h_smoke_{self.suffix}"
        self.database.sql(f'CREATE DATABASE "{name}"')
        password = quote(self.database.password, safe="")
        self.database_url = (
            f"postgres://postgres:{password}@{HOST}:{self.database.port}/{name}"
        )

    def _broker(self, user: str, password: str) -> None:
        rabbitmqctl("add_vhost", self.vhost)
        self.cleanups.append(lambda: rabbitmqctl("delete_vhost", self.vhost))
        self._broker_user("server-user.sh", [self.vhost, user], user, password, ".*")

    def _broker_user(
        self, script: str, args: list[str], user: str, password: str, pattern: str
    ) -> None:
        """The user made by deploy/rabbitmq's script when the checkout has it
        (password on stdin), else with rabbitmqctl as the script would."""
        self.cleanups.append(lambda: rabbitmqctl("delete_user", user, check=False))
        path = RABBITMQ_SCRIPTS / script
        if path.is_file():
            done = subprocess.run(
                ["bash", str(path), *args],
                input=password + "\n",
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if done.returncode != 0:
                raise StackError(f"{script}: {done.stdout}{done.stderr}")
            return
        rabbitmqctl("add_user", user, password)
        rabbitmqctl(
            "set_permissions", "-p", self.vhost, user, pattern, pattern, pattern
        )

    def _amqp(self, user: str, password: str) -> str:
        return f"amqp://{user}:{password}@{HOST}:5672/{quote(self.vhost, safe='')}"

    def pool_broker_url(self, pool: str) -> str:
        """A broker user of ``pool``'s own, allowed only its queue's names."""
        user, password = f"pool-{pool}", _password()
        only = pool_permission(pool)
        self._broker_user("pool-user.sh", [pool, self.vhost], user, password, only)
        url = self._amqp(user, password)
        self.broker_users[pool] = url
        return url

    def _s3(self) -> None:
        port = self.s3_endpoint.rsplit(":", 1)[1]
        argv = [sys.executable, "-m", "moto.server", "-H", HOST, "-p", port]
        moto = self.start_process("s3", argv, env=base_env())
        wait_for(
            lambda: _answers(f"{self.s3_endpoint}/moto-api/") or not moto.alive(),
            START_TIMEOUT_S,
            moto.tail,
        )
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.s3_endpoint,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_SECRET,
            region_name=S3_REGION,
        )
        client.create_bucket(Bucket=BUCKET, ObjectLockEnabledForBucket=True)

    def _certificate(self) -> None:
        """A self-signed certificate for 127.0.0.1: deploy/nginx/selfsigned.py's
        when the checkout has it, else openssl's."""
        tls = self.root / "tls"
        if SELFSIGNED.is_file():
            argv = [sys.executable, str(SELFSIGNED), str(tls), HOST, "localhost"]
        else:
            argv = [
                "openssl", "req", "-x509", "-newkey", "ec",
                "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", str(self.key_file), "-out", str(self.ca_file),
                "-days", "2", "-subj", f"/CN={HOST}",
                "-addext", f"subjectAltName=IP:{HOST},DNS:localhost",
            ]  # fmt: skip
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=60, check=False
        )
        if done.returncode != 0 or not self.ca_file.is_file():
            raise StackError(f"{argv[1]}: {done.stdout}{done.stderr}")

    def _server_env(self) -> dict[str, str]:
        home = self.root / "server-home"  # gunicorn's control socket, caches
        home.mkdir()
        return {
            **base_env(),
            "HOME": str(home),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_DEBUG": "False",
            "REPROGATE_EMBEDDED": "False",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": f"{HOST},localhost",
            "DJANGO_CSRF_TRUSTED_ORIGINS": self.url,
            "REPROGATE_SITE_URL": self.url,
            "REPROGATE_TRUSTED_PROXIES": HOST,
            "REPROGATE_VAR_DIR": str(self.var),
            "REPROGATE_KEYS_DIR": str(self.var / "keys"),
            "REPROGATE_LOG_ORIGIN": f"smoke-{self.suffix}.reprogate.test/log",
            "DATABASE_URL": self.database_url,
            "CELERY_BROKER_URL": self.broker_users["server"],
            "AWS_STORAGE_BUCKET_NAME": BUCKET,
            "AWS_S3_ENDPOINT_URL": self.s3_endpoint,
            "AWS_S3_REGION_NAME": S3_REGION,
            "AWS_S3_ADDRESSING_STYLE": "path",
            "AWS_ACCESS_KEY_ID": S3_KEY,
            "AWS_SECRET_ACCESS_KEY": S3_SECRET,
            "DJANGO_EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
            "BUNDLE_SPOOL_DIR": str(self.var / "spool"),
            # What manage.py pool_join prints for a lab host to start its agent.
            "REPROGATE_PUBLIC_URL": self.url,
            "REPROGATE_AGENT_BROKER_URL": (
                f"amqp://pool-{{pool}}@{HOST}:5672/{quote(self.vhost, safe='')}"
            ),
            "RUNNER_HEARTBEAT_SECONDS": "1",
            "RUNNER_PROGRESS_WRITE_SECONDS": "0.2",
            "RUNNER_WORK_DIR": str(self.var / "work"),
        }

    def _web(self) -> Process:
        argv = [str(BIN / "gunicorn"), "config.wsgi:application"]
        argv += ["-c", "deploy/gunicorn.conf.py"]
        env = {
            **self.env,
            "GUNICORN_BIND": f"{HOST}:{self.web_port}",
            "GUNICORN_WORKERS": "2",
            "GUNICORN_FORWARDED_ALLOW_IPS": HOST,
        }
        return self.start_process("web", argv, env=env)

    def _wait_web(self, web: Process) -> None:
        healthz = f"http://{HOST}:{self.web_port}/healthz"
        wait_for(
            lambda: _answers(healthz) or not web.alive(), START_TIMEOUT_S, web.tail
        )
        if not web.alive():
            raise StackError(f"gunicorn exited:\n{web.tail()}")

    def nginx_conf(self) -> str:
        """The site's nginx configuration: deploy/nginx's template rendered with
        envsubst for the variables its header lists, else (a checkout without it)
        a minimal one of the same shape."""
        if NGINX_TEMPLATE.is_file():
            text = render_template(
                NGINX_TEMPLATE.read_text(),
                {
                    "REPROGATE_SERVER_NAME": HOST,
                    "REPROGATE_LISTEN_HTTPS": f"{HOST}:{self.https_port}",
                    "REPROGATE_LISTEN_HTTP": f"{HOST}:{self.http_port}",
                    "REPROGATE_UPSTREAM": f"{HOST}:{self.web_port}",
                    "REPROGATE_TLS_CERT": str(self.ca_file),
                    "REPROGATE_TLS_KEY": str(self.key_file),
                    "REPROGATE_STATIC_ROOT": str(self.var / "static"),
                },
            )
            # The stack's own log folder, not the system's.
            text = text.replace("/var/log/nginx/", f"{self.root / 'nginx' / 'logs'}/")
            if _nginx_version() < (1, 25, 1):
                # "http2 on;" is nginx 1.25.1's; before it, a flag of listen.
                text = text.replace("    http2 on;\n", "").replace(
                    f"listen {HOST}:{self.https_port} ssl;",
                    f"listen {HOST}:{self.https_port} ssl http2;",
                )
            return text
        return f"""
server {{
    listen {HOST}:{self.https_port} ssl;
    server_name {HOST};
    ssl_certificate {self.ca_file};
    ssl_certificate_key {self.key_file};
    ssl_protocols TLSv1.2 TLSv1.3;
    client_max_body_size 4g;
    location / {{
        proxy_pass http://{HOST}:{self.web_port};
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-Proto https;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_read_timeout 300s;
        proxy_request_buffering off;
    }}
}}
"""

    def _nginx(self) -> None:
        prefix = self.root / "nginx"
        (prefix / "logs").mkdir(parents=True, exist_ok=True)
        (prefix / "site.conf").write_text(self.nginx_conf())
        (prefix / "nginx.conf").write_text(
            f"""
daemon off;
user root;
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "logs" / "error.log"} info;
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    access_log {prefix / "logs" / "access.log"};
    client_body_temp_path {prefix / "body"};
    proxy_temp_path {prefix / "proxy"};
    fastcgi_temp_path {prefix / "fastcgi"};
    uwsgi_temp_path {prefix / "uwsgi"};
    scgi_temp_path {prefix / "scgi"};
    include {prefix / "site.conf"};
}}
"""
        )
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        argv = [nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
        check = subprocess.run(
            [*argv, "-t"], capture_output=True, text=True, timeout=30, check=False
        )
        if check.returncode != 0:
            raise StackError(f"nginx -t: {check.stderr}\n{self.nginx_conf()}")
        server = self.start_process("nginx", argv, env=base_env())
        wait_for(
            lambda: self.healthz() == 200 or not server.alive(),
            START_TIMEOUT_S,
            lambda: server.tail() + (prefix / "logs" / "error.log").read_text(),
        )

    # --- use ------------------------------------------------------------------------
    def start_process(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path = PROJECT_DIR,
    ) -> Process:
        process = Process(
            name, argv, self.env if env is None else env, self.logs / f"{name}.log", cwd
        )
        self.processes.append(process.start())
        return process

    def manage(
        self, *args: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``manage.py`` with the server's environment."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        if check and done.returncode != 0:
            raise StackError(
                f"manage.py {args[0]} exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def shell(self, code: str) -> str:
        """Python run by ``manage.py shell -c`` on the server; its stdout."""
        return self.manage("shell", "-c", code).stdout

    def s3_keys(self) -> list[str]:
        """Every object key in the stack's bucket."""
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.s3_endpoint,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_SECRET,
            region_name=S3_REGION,
        )
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return [item["Key"] for page in pages for item in page.get("Contents", ())]

    def tls_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def api(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        scheme: str = "Token",
        timeout: float = 30.0,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """One HTTPS request to nginx; the JSON answer (None if not JSON)."""
        headers = {"Accept": "application/json", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token is not None:
            headers["Authorization"] = f"{scheme} {token}"
        request = urllib.request.Request(  # noqa: S310 - our own https URL
            self.url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(  # noqa: S310
                request, timeout=timeout, context=self.tls_context()
            ) as response:
                return _answer(response.status, response.read(), response.headers)
        except urllib.error.HTTPError as error:
            return _answer(error.code, error.read(), error.headers)

    def healthz(self) -> int | None:
        try:
            return self.api("GET", "/healthz", timeout=5).status
        except (OSError, urllib.error.URLError):
            return None


def _finished(process: Process, timeout: float) -> None:
    assert process.process is not None
    try:
        status = process.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.stop()
        raise StackError(f"{process.name} took over {timeout:.0f} s") from None
    if status != 0:
        raise StackError(f"{process.name} exited {status}:\n{process.tail()}")


def _answer(status: int, raw: bytes, headers: Any) -> Answer:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    return Answer(status, body, {k.lower(): v for k, v in dict(headers).items()})


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - loopback
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, urllib.error.URLError):
        return False


def render_template(text: str, values: dict[str, str]) -> str:
    """``envsubst`` with only the variables the template's header lists (every
    ``${NAME}`` it names that ``values`` has), so nginx's own ``$host`` and the
    like stay as they are."""
    names = sorted({name for name in values if f"${{{name}}}" in text})
    shell_format = " ".join(f"${{{name}}}" for name in names)
    done = subprocess.run(
        ["envsubst", shell_format],
        input=text,
        env={**base_env(), **values},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def _nginx_version() -> tuple[int, ...]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    done = subprocess.run([nginx, "-v"], capture_output=True, text=True, check=False)
    found = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", done.stderr + done.stdout)
    return tuple(int(part) for part in found.groups()) if found else (0,)


@contextlib.contextmanager
def running(root: Path) -> Iterator[Stack]:
    stack = Stack(root)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
