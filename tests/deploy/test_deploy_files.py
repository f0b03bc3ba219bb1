"""Every file under deploy/ is checked by a real tool or a schema, without containers.

- nginx: the template rendered for loopback passes ``nginx -t`` on Debian's nginx,
  and a running nginx with it redirects, proxies, serves static files and applies
  each path's body limit (gunicorn's place taken by a stdlib server that echoes what
  it was sent);
- compose.yaml: the compose specification's JSON schema (as check-jsonschema ships
  it, installed from PyPI with the dev dependencies) and the stack's own rules;
- deploy/k8s: base and overlay rendered (tests/deploy/kustomize_lite.py, compared
  with ``kubectl kustomize`` where that exists), each resource validated by
  kubernetes-validate, strict, for one pinned Kubernetes version;
- systemd units: ``systemd-analyze verify``, and bubblewrap run under the agent
  unit's privilege limits;
- the rest (Dockerfile, scripts, Python, environment files): see COVERAGE, which
  every file under deploy/ must match.
"""

from __future__ import annotations

import copy
import http.client
import http.server
import importlib.util
import json
import os
import re
import runpy
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from django.conf import settings
from django.urls import reverse

from tests.deploy.kustomize_lite import KustomizeError, build, merge

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
KUBERNETES_VERSION = "1.33.0"
# CONTRACT.md: all a lab host's agent is given.
AGENT_VARIABLES = frozenset(
    {
        "REPROGATE_SERVER_URL",
        "REPROGATE_HOST_TOKEN",
        "REPROGATE_HOST_TOKEN_FILE",
        "REPROGATE_BROKER_URL",
        "REPROGATE_BROKER_URL_FILE",
        "REPROGATE_CA_FILE",
        "REPROGATE_AGENT_WORK_DIR",
        "REPROGATE_AGENT_NAME",
        "REPROGATE_AGENT_STATE_DIR",
    }
)
MiB = 1024 * 1024


def _load_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render_py = _load_module(DEPLOY / "nginx" / "render.py")
selfsigned_py = _load_module(DEPLOY / "nginx" / "selfsigned.py")
healthcheck_py = _load_module(DEPLOY / "healthcheck.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- nginx ----------------------------------------------------------------------------


def _nginx_wrapper(prefix: Path, site: Path) -> Path:
    """A complete nginx.conf around the rendered site, everything under ``prefix``."""
    conf = prefix / "nginx.conf"
    temp = " ".join(
        f"{kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf.write_text(
        f"worker_processes 1;\npid {prefix / 'nginx.pid'};\n"
        f"error_log {prefix / 'error.log'} warn;\n"
        "events { worker_connections 64; }\n"
        f"http {{\n  include /etc/nginx/mime.types;\n"
        f"  access_log {prefix / 'access.log'};\n  {temp}\n  include {site};\n}}\n"
    )
    return conf


def _loopback_values(
    prefix: Path, https: int, http: int, upstream: int
) -> dict[str, str]:
    selfsigned_py.write_selfsigned(prefix / "certs", ["localhost", "127.0.0.1"])
    return {
        "REPROGATE_SERVER_NAME": "localhost",
        "REPROGATE_LISTEN_HTTPS": f"127.0.0.1:{https}",
        "REPROGATE_LISTEN_HTTP": f"127.0.0.1:{http}",
        # an address: a host name would have to resolve when nginx -t runs
        "REPROGATE_UPSTREAM": f"127.0.0.1:{upstream}",
        "REPROGATE_TLS_CERT": str(prefix / "certs" / "tls.crt"),
        "REPROGATE_TLS_KEY": str(prefix / "certs" / "tls.key"),
        "REPROGATE_STATIC_ROOT": str(prefix / "static"),
    }


def _nginx() -> str:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.skip("Debian's nginx is not installed (.ci/run installs it)")
    return nginx


@pytest.fixture
def prefix() -> Iterator[Path]:
    # nginx's workers run as nobody when the master is root: the tree must be
    # readable by them.
    path = Path(tempfile.mkdtemp(prefix="reprogate-nginx-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_rendered_template_passes_nginx_t(prefix: Path) -> None:
    values = _loopback_values(prefix, 8443, 8080, 8000)
    site = prefix / "reprogate.conf"
    site.write_text(render_py.render(values))
    conf = _nginx_wrapper(prefix, site)
    result = subprocess.run(
        [_nginx(), "-t", "-p", str(prefix), "-c", str(conf)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr
    # nginx >= 1.25 (Debian 13) calls `listen … http2` deprecated: the one warning
    # allowed, as 1.22 (Debian 12) knows no `http2 on`
    warnings = [
        line
        for line in result.stderr.splitlines()
        if "[warn]" in line and '"listen ... http2" directive is deprecated' not in line
    ]
    assert warnings == []


def test_nginx_t_fails_on_a_certificate_that_is_not_there(prefix: Path) -> None:
    values = _loopback_values(prefix, 8443, 8080, 8000)
    values["REPROGATE_TLS_CERT"] = str(prefix / "missing.crt")
    site = prefix / "reprogate.conf"
    site.write_text(render_py.render(values))
    result = subprocess.run(
        [_nginx(), "-t", "-p", str(prefix), "-c", str(_nginx_wrapper(prefix, site))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "missing.crt" in result.stderr


def test_template_uses_exactly_the_documented_variables() -> None:
    text = render_py.TEMPLATE.read_text()
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert set(re.findall(r"\$\{(\w+)\}", body)) == set(render_py.VARIABLES)
    for name in render_py.VARIABLES:
        assert re.search(rf"^#\s+{name}\s", header, re.M), name
    assert f"envsubst '{render_py.ENVSUBST_LIST}'" in header


def test_render_matches_envsubst_and_keeps_nginx_variables(tmp_path: Path) -> None:
    values = _loopback_values(tmp_path, 8443, 8080, 8000)
    rendered = render_py.render(values)
    assert "${" not in rendered.split("upstream reprogate_app", 1)[1]
    for nginx_variable in ("$host", "$request_uri", "$request_id", "$http_upgrade"):
        assert nginx_variable in rendered
    envsubst = shutil.which("envsubst")
    if envsubst is None:
        pytest.skip("envsubst (gettext-base) is not installed")
    result = subprocess.run(
        [envsubst, render_py.ENVSUBST_LIST],
        input=render_py.TEMPLATE.read_text(),
        capture_output=True,
        text=True,
        env={**os.environ, **values},
        check=True,
    )
    assert result.stdout == rendered


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("REPROGATE_UPSTREAM", "", "is not set"),
        ("REPROGATE_SERVER_NAME", "a.example b.example", "holds a space"),
        ("REPROGATE_STATIC_ROOT", "/srv/static;include /etc/passwd", "holds a space"),
        ("REPROGATE_TLS_KEY", "/k}", "holds a space"),
        ("REPROGATE_LISTEN_HTTP", "$host", "holds a space"),
    ],
)
def test_render_refuses_unset_and_unsafe_values(
    tmp_path: Path, name: str, value: str, problem: str
) -> None:
    values = _loopback_values(tmp_path, 8443, 8080, 8000)
    values[name] = value
    with pytest.raises(render_py.RenderError, match=problem):
        render_py.render(values)


def test_render_command_writes_the_file_and_names_a_missing_variable(
    tmp_path: Path,
) -> None:
    values = _loopback_values(tmp_path, 8443, 8080, 8000)
    out = tmp_path / "site.conf"
    script = str(DEPLOY / "nginx" / "render.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROGATE_")}
    args = [f"{k}={v}" for k, v in values.items()]
    subprocess.run(["python", script, "-o", str(out), *args], env=env, check=True)
    assert out.read_text() == render_py.render(values)
    missing = subprocess.run(
        ["python", script, *args[1:]], env=env, capture_output=True, text=True
    )
    assert missing.returncode == 2
    assert "REPROGATE_SERVER_NAME is not set" in missing.stderr


def _locations(rendered: str) -> dict[str, str]:
    """Each top-level location of the TLS server: its pattern -> its block."""
    tls_server = rendered.split("ssl http2;", 1)[1]
    blocks: dict[str, str] = {}
    for match in re.finditer(
        r"\n    location ([^{]+)\{(.*?)\n    \}", tls_server, re.S
    ):
        blocks[match.group(1).strip()] = match.group(2)
    return blocks


def _body_limit(block: str) -> int:
    found = re.search(r"client_max_body_size (\d+)m;", block)
    assert found, block
    return int(found.group(1)) * MiB


def test_body_limits_and_streaming_follow_the_app_limits(tmp_path: Path) -> None:
    rendered = render_py.render(_loopback_values(tmp_path, 8443, 8080, 8000))
    locations = _locations(rendered)
    rfp = uuid.uuid4()
    streamed = {
        reverse(
            "bundle-list", kwargs={"rfp_id": rfp}
        ): settings.BUNDLE_MAX_UPLOAD_BYTES,
        reverse("artifacts:bundle_upload", kwargs={"rfp_id": rfp}): (
            settings.BUNDLE_MAX_UPLOAD_BYTES
        ),
        "/api/v1/runner/runs/7/outputs/results/fio.json": (
            settings.RUNNER_OUTPUT_LIMIT_BYTES
        ),
    }
    for url, app_limit in streamed.items():
        matching = [p for p in locations if p.startswith("~") and _matches(p, url)]
        assert len(matching) == 1, (url, list(locations))
        block = locations[matching[0]]
        assert _body_limit(block) > app_limit, url
        assert "proxy_request_buffering off;" in block
        assert re.search(r"client_body_timeout \d{4,}s;", block)
        assert re.search(r"proxy_read_timeout \d{4,}s;", block)
    server_limit = re.search(r"\n    client_max_body_size (\d+)m;", rendered)
    assert server_limit
    assert (
        int(server_limit.group(1)) * MiB > settings.PROCUREMENT_BID_DOCUMENT_MAX_BYTES
    )
    assert "allow 10.0.0.0/8;" in locations["= /metrics"]
    assert "deny all;" in locations["= /metrics"]


def _matches(pattern: str, url: str) -> bool:
    return re.search(pattern.lstrip("~ ").strip('"'), url) is not None


class _Echo(http.server.BaseHTTPRequestHandler):
    """gunicorn's place: answers with the path, headers and body size it got."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        received = 0
        while received < length:
            chunk = self.rfile.read(min(MiB, length - received))
            if not chunk:
                break
            received += len(chunk)
        body = json.dumps(
            {"path": self.path, "headers": dict(self.headers), "received": received}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Stack:
    def __init__(self, prefix: Path, https: int, http: int) -> None:
        self.prefix, self.https, self.http = prefix, https, http

    def request(
        self,
        method: str,
        path: str,
        *,
        tls: bool = True,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        connection: http.client.HTTPConnection
        if tls:
            context = ssl.create_default_context(
                cafile=str(self.prefix / "certs" / "tls.crt")
            )
            connection = http.client.HTTPSConnection(
                "localhost", self.https, context=context, timeout=30
            )
        else:
            connection = http.client.HTTPConnection("127.0.0.1", self.http, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def echoed(self, path: str, **kwargs: Any) -> dict[str, Any]:
        status, _, body = self.request("GET", path, **kwargs)
        assert status == 200, body
        return dict(json.loads(body))


@pytest.fixture(scope="module")
def nginx_stack() -> Iterator[_Stack]:
    nginx = _nginx()
    prefix = Path(tempfile.mkdtemp(prefix="reprogate-nginx-"))
    prefix.chmod(0o755)
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    https, http_port = _free_port(), _free_port()
    values = _loopback_values(prefix, https, http_port, upstream.server_address[1])
    (prefix / "static" / "css").mkdir(parents=True)
    (prefix / "static" / "css" / "app.css").write_text("body{}")
    (prefix / "static" / "css" / "app.0123456789ab.css").write_text("body{}")
    for path in (prefix / "static").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    site = prefix / "reprogate.conf"
    site.write_text(render_py.render(values))
    conf = _nginx_wrapper(prefix, site)
    process = subprocess.Popen(
        [nginx, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", https), timeout=0.2).close()
                break
            except OSError:
                assert process.poll() is None, process.stderr and process.stderr.read()
                threading.Event().wait(0.05)
        yield _Stack(prefix, https, http_port)
    finally:
        process.terminate()
        process.wait(timeout=10)
        upstream.shutdown()
        upstream.server_close()
        shutil.rmtree(prefix, ignore_errors=True)


def test_plain_http_redirects_to_https_except_healthz(nginx_stack: _Stack) -> None:
    status, headers, _ = nginx_stack.request(
        "GET", "/rfps/?page=2", tls=False, headers={"Host": "localhost"}
    )
    assert status == 301
    assert headers["Location"] == "https://localhost/rfps/?page=2"
    echoed = nginx_stack.echoed("/healthz", tls=False, headers={"Host": "localhost"})
    assert echoed["path"] == "/healthz"
    assert echoed["headers"]["X-Forwarded-Proto"] == "http"


def test_proxy_passes_scheme_host_and_request_id(nginx_stack: _Stack) -> None:
    echoed = nginx_stack.echoed("/dashboard/")
    assert echoed["headers"]["X-Forwarded-Proto"] == "https"
    assert echoed["headers"]["Host"] == "localhost"
    assert re.fullmatch(r"[0-9a-f]{32}", echoed["headers"]["X-Request-ID"])
    given = nginx_stack.echoed("/dashboard/", headers={"X-Request-ID": "abc-123"})
    assert given["headers"]["X-Request-ID"] == "abc-123"
    assert nginx_stack.echoed("/metrics")["path"] == "/metrics"  # from loopback


def test_static_files_come_from_the_static_root(nginx_stack: _Stack) -> None:
    status, headers, body = nginx_stack.request("GET", "/static/css/app.css")
    assert (status, body) == (200, b"body{}")
    assert "immutable" not in headers["Cache-Control"]
    status, headers, _ = nginx_stack.request("GET", "/static/css/app.0123456789ab.css")
    assert status == 200
    assert "immutable" in headers["Cache-Control"]
    _, _, body = nginx_stack.request("GET", "/static/../certs/tls.key")
    assert b"PRIVATE KEY" not in body


def test_each_path_has_its_body_limit(nginx_stack: _Stack) -> None:
    body = b"x" * (120 * MiB)  # over the general 110m, under the outputs' 1100m
    status, _, answer = nginx_stack.request(
        "PUT", "/api/v1/runner/runs/7/outputs/fio.json", body=body
    )
    assert status == 200
    assert json.loads(answer)["received"] == len(body)
    status, _, _ = nginx_stack.request("POST", "/dashboard/", body=body)
    assert status == 413


# --- compose --------------------------------------------------------------------------


def _compose() -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / "compose.yaml").read_text()))


def _compose_schema() -> dict[str, Any]:
    from importlib.resources import files

    vendor = files("check_jsonschema.builtin_schemas.vendor")
    return dict(json.loads(vendor.joinpath("compose-spec.json").read_text()))


def _compose_errors(document: dict[str, Any]) -> list[str]:
    schema = _compose_schema()
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)
    ]


def test_compose_file_follows_the_compose_specification() -> None:
    assert _compose_errors(_compose()) == []


def test_compose_schema_refuses_what_compose_would() -> None:
    document = _compose()
    document["services"]["web"]["helthcheck"] = {"test": ["CMD", "true"]}
    document["services"]["worker"]["depends_on"]["db"]["condition"] = "whenever"
    errors = _compose_errors(document)
    assert any("helthcheck" in e for e in errors), errors
    assert any("whenever" in e for e in errors), errors


def test_compose_services_refer_to_what_is_defined() -> None:
    compose = _compose()
    services = compose["services"]
    expected = {"nginx", "web", "worker", "beat", "migrate", "db", "rabbitmq", "minio"}
    assert expected <= set(services)
    assert services["selfsigned"]["profiles"] == ["selfsigned"]
    assert services["beat"]["deploy"]["replicas"] == 1
    for name, service in services.items():
        for target in service.get("depends_on", {}):
            assert target in services, (name, target)
        for secret in service.get("secrets", []):
            source = secret if isinstance(secret, str) else secret["source"]
            assert source in compose["secrets"], (name, source)
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert source.startswith(("/", ".")) or source in compose["volumes"], volume
    for name in ("web", "nginx"):
        assert "/healthz" in " ".join(services[name]["healthcheck"]["test"]), name


def test_compose_app_reads_secrets_from_files_and_keeps_its_keys() -> None:
    services = _compose()["services"]
    for name in ("web", "worker", "beat", "migrate"):
        environment = services[name]["environment"]
        assert environment["REPROGATE_KEYS_DIR"] == "/var/lib/reprogate/keys"
        assert "keys:/var/lib/reprogate/keys" in services[name]["volumes"]
        for variable in ("DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"):
            assert environment[f"{variable}_FILE"].startswith("/run/secrets/")
            assert environment[variable] == ""  # the file wins over a copied .env
    for name, service in services.items():
        environment = service.get("environment", {})
        for key, value in environment.items():
            if re.search(r"PASSWORD|SECRET|TOKEN", key) and not key.endswith("_FILE"):
                assert value == "", (name, key)


def test_compose_nginx_renders_the_template_with_its_variables() -> None:
    nginx = _compose()["services"]["nginx"]
    names = {k for k in nginx["environment"] if k.startswith("REPROGATE_")}
    assert names == set(render_py.VARIABLES)
    assert re.match(nginx["environment"]["NGINX_ENVSUBST_FILTER"], "REPROGATE_UPSTREAM")
    assert any(
        v.startswith("./nginx/reprogate.conf.template:/etc/nginx/templates/")
        for v in nginx["volumes"]
    )
    # compose's values (defaults interpolated) are ones the renderer takes
    values = {
        k: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(v))
        for k, v in nginx["environment"].items()
    }
    assert "server_name reprogate.example.com;" in render_py.render(values)


def test_compose_agent_holds_only_the_contract_environment() -> None:
    agent = _compose()["services"]["agent"]
    assert agent["command"] == ["python", "-m", "reprogate_agent"]
    assert set(agent["environment"]) <= AGENT_VARIABLES
    assert "env_file" not in agent
    assert set(agent["secrets"]) == {"agent_host_token", "agent_broker_url"}
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"apt-get install[^\n]*\n[^\n]*bubblewrap", dockerfile)


def test_compose_interpolations_are_documented_in_its_header() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    used = set(re.findall(r"(?<!\$)\$\{(\w+)", body))
    assert used
    for name in used:
        assert re.search(rf"^#\s+{name}\s", header, re.M), name
    # the app's own variables stay in .env.example, which lists nothing else
    assert not used & set(_env_example())


def test_make_secrets_writes_every_compose_secret_once(tmp_path: Path) -> None:
    script = DEPLOY / "make-secrets.sh"
    target = tmp_path / "secrets"
    subprocess.run(["bash", str(script), str(target)], check=True, capture_output=True)
    files = {p.name: p.read_text() for p in target.iterdir() if p.name != ".gitignore"}
    expected = {
        Path(s["file"]).name for s in _compose()["secrets"].values() if "file" in s
    }
    assert set(files) == expected
    assert oct(target.stat().st_mode & 0o777) == "0o700"
    password = files["postgres_password"].strip()
    assert len(password) >= 32
    assert f":{password}@db:5432/" in files["database_url"]
    rabbit = re.search(r"default_pass = (\S+)", files["rabbitmq.conf"])
    assert rabbit
    assert f":{rabbit.group(1)}@rabbitmq:" in files["celery_broker_url"]
    again = subprocess.run(
        ["bash", str(script), str(target)], check=True, capture_output=True, text=True
    )
    assert "wrote" not in again.stdout
    assert {
        p.name: p.read_text() for p in target.iterdir() if p.name != ".gitignore"
    } == files


# --- Kubernetes -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {
        "base": build(K8S / "base"),
        "production": build(K8S / "overlays" / "production"),
    }


@pytest.mark.parametrize("tree", ["base", "production"])
def test_k8s_resources_are_valid_kubernetes(
    rendered: dict[str, list[dict[str, Any]]], tree: str
) -> None:
    for resource in rendered[tree]:
        kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)


def test_k8s_strict_validation_refuses_an_unknown_field(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    web = copy.deepcopy(_one(rendered["base"], "Deployment", "reprogate-web"))
    web["spec"]["replica"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(web, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("tree", ["base", "overlays/production"])
def test_k8s_renderer_agrees_with_kubectl_kustomize(
    rendered: dict[str, list[dict[str, Any]]], tree: str
) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the renderer alone is used")
    output = subprocess.run(
        [kubectl, "kustomize", str(K8S / tree)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    theirs = sorted(json.dumps(d, sort_keys=True) for d in yaml.safe_load_all(output))
    mine = rendered["base" if tree == "base" else "production"]
    assert sorted(json.dumps(d, sort_keys=True) for d in mine) == theirs


def _one(resources: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [
        r for r in resources if r["kind"] == kind and r["metadata"]["name"] == name
    ]
    return found


def _pods(resources: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for resource in resources:
        if resource["kind"] in ("Deployment", "Job"):
            yield resource["metadata"]["name"], resource["spec"]["template"]["spec"]


def test_k8s_base_deployments_pods_and_secrets(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    base = rendered["base"]
    assert {r["kind"] for r in base} >= {
        "Deployment",
        "Service",
        "Ingress",
        "ConfigMap",
        "PodDisruptionBudget",
        "Job",
    }
    assert "Secret" not in {r["kind"] for r in base}  # referenced by name only
    for name in ("reprogate-web", "reprogate-worker", "reprogate-beat"):
        deployment = _one(base, "Deployment", name)
        assert deployment["spec"]["replicas"] == 1
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    for name, pod in _pods(base):
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        secrets = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
        assert secrets == ["reprogate-secrets"], name
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            assert {"requests", "limits"} <= set(container["resources"]), name
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_k8s_base_web_probes_budget_and_ingress(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    base = rendered["base"]
    web = _one(base, "Deployment", "reprogate-web")["spec"]["template"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert web["spec"]["containers"][0][probe]["httpGet"]["path"] == "/healthz"
    pdb = _one(base, "PodDisruptionBudget", "reprogate-web")
    labels = web["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ingress = _one(base, "Ingress", "reprogate")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    annotations = ingress["metadata"]["annotations"]
    size = annotations["nginx.ingress.kubernetes.io/proxy-body-size"]
    assert int(size.rstrip("m")) * MiB > settings.BUNDLE_MAX_UPLOAD_BYTES
    assert annotations["nginx.ingress.kubernetes.io/proxy-request-buffering"] == "off"
    metrics = _one(base, "Ingress", "reprogate-metrics")
    (path,) = metrics["spec"]["rules"][0]["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/metrics", "Exact")
    allowed = metrics["metadata"]["annotations"][
        "nginx.ingress.kubernetes.io/whitelist-source-range"
    ]
    assert "0.0.0.0/0" not in allowed
    assert allowed.split(",") == ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]


def test_k8s_production_overlay_patches_replicas_image_and_host(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    production = rendered["production"]
    assert _one(production, "Deployment", "reprogate-web")["spec"]["replicas"] == 2
    assert {r["metadata"]["namespace"] for r in production} == {"reprogate"}
    images = {
        c["image"]
        for _, pod in _pods(production)
        for c in [*pod.get("initContainers", []), *pod["containers"]]
    }
    assert images == {"registry.example.com/reprogate:1.0.0"}
    text = json.dumps(production)
    assert "reprogate.example.com" not in text
    for name in ("reprogate", "reprogate-metrics"):
        host = _one(production, "Ingress", name)["spec"]["rules"][0]["host"]
        assert host == "reprogate.acme-lab.org"


def test_kustomize_lite_merges_lists_by_name_and_refuses_unknown_fields(
    tmp_path: Path,
) -> None:
    base = {"containers": [{"name": "a", "image": "x"}, {"name": "b"}], "tls": [1, 2]}
    patch = {"containers": [{"name": "b", "image": "y"}], "tls": [3], "gone": None}
    assert merge(base, patch) == {
        "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
        "tls": [3],
    }
    (tmp_path / "kustomization.yaml").write_text(
        "resources: []\ncommonLabels: {a: b}\n"
    )
    with pytest.raises(KustomizeError, match="commonLabels"):
        build(tmp_path)


def _k8s_reached() -> set[Path]:
    """The files a kustomization under deploy/k8s names (resources, patches)."""
    reached: set[Path] = set()
    for kustomization in K8S.rglob("kustomization.yaml"):
        reached.add(kustomization)
        data = yaml.safe_load(kustomization.read_text())
        for entry in [*data.get("resources", []), *data.get("patches", [])]:
            path = kustomization.parent / (
                entry["path"] if isinstance(entry, dict) else entry
            )
            reached.add(path.resolve())
    return reached


# --- systemd --------------------------------------------------------------------------

SYSTEMD = DEPLOY / "systemd"


def _unit(name: str) -> dict[str, list[str]]:
    """The unit's directives (a name may repeat), comments left out."""
    directives: dict[str, list[str]] = {}
    for line in (SYSTEMD / name).read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            directives.setdefault(key, []).append(value)
    return directives


def test_systemd_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze (Debian's systemd) is not installed")
    units = []
    for unit in SYSTEMD.glob("*.service"):
        # the units name the installation /opt/reprogate; here it is this checkout,
        # whose .venv holds the same commands
        text = unit.read_text().replace("/opt/reprogate", str(ROOT))
        name = unit.name.replace("@.service", "@pool-a.service")
        (tmp_path / name).write_text(text)
        units.append(str(tmp_path / name))
    assert len(units) >= 5
    result = subprocess.run(
        [analyze, "verify", "--man=no", *units],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    # unknown keys and bad values are warnings only: they must not be there either
    assert result.stdout + result.stderr == ""


def test_systemd_verify_reports_a_bad_directive(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze (Debian's systemd) is not installed")
    text = (SYSTEMD / "reprogate-beat.service").read_text()
    broken = tmp_path / "reprogate-beat.service"
    broken.write_text(text.replace("Restart=always", "Restart=sometimes"))
    result = subprocess.run(
        [analyze, "verify", "--man=no", str(broken)], capture_output=True, text=True
    )
    assert "sometimes" in result.stderr


def test_agent_unit_is_hardened_as_far_as_bubblewrap_allows() -> None:
    unit = _unit("reprogate-agent@.service")
    assert unit["ExecStart"] == ["/opt/reprogate/.venv/bin/python -m reprogate_agent"]
    assert unit["Restart"] == ["always"]
    assert unit["EnvironmentFile"] == ["/etc/reprogate/agent-%i.env"]
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "PrivateTmp": "yes",
        "ProtectHome": "yes",
        "CapabilityBoundingSet": "",
    }.items():
        assert unit[key] == [value], key
    (work_dir,) = [v.split("=", 1)[1] for v in unit["Environment"] if "WORK_DIR" in v]
    assert unit["ReadWritePaths"] == [work_dir]
    # each of these makes bubblewrap's namespaces or its new /proc impossible
    for key in (
        "RestrictNamespaces",
        "PrivateUsers",
        "SystemCallFilter",
        "ProtectKernelTunables",
        "ProtectKernelLogs",
        "ProtectProc",
        "ProcSubset",
    ):
        assert key not in unit, key


def test_agent_env_example_holds_only_the_contract_variables() -> None:
    names = set()
    for line in (SYSTEMD / "agent.env.example").read_text().splitlines():
        line = line.lstrip("# ")
        if re.match(r"[A-Z_]+=", line):
            names.add(line.split("=", 1)[0])
    assert {
        "REPROGATE_SERVER_URL",
        "REPROGATE_HOST_TOKEN",
        "REPROGATE_BROKER_URL",
    } <= names
    assert names <= AGENT_VARIABLES


def _sandboxed(
    tmp_path: Path, *, limits: list[str], wrap: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """The runner's own bubblewrap command, as an unprivileged user under ``limits``."""
    from benchmarks.lib.sandbox.command import OUTPUT_MOUNT, bwrap_argv

    bwrap = shutil.which("bwrap")
    if bwrap is None or os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip(
            "needs bubblewrap, setpriv and root (to become an unprivileged user)"
        )
    bundle, output = tmp_path / "bundle", tmp_path / "output"
    for path in (bundle, output):
        path.mkdir(exist_ok=True)
        path.chmod(0o777)
    argv = bwrap_argv(
        bwrap,
        bundle_dir=bundle,
        output_dir=output,
        network=False,
        tmp_bytes=None,
        user_namespace=True,
        drop_caps=True,
    )
    script = f"test -r /proc/self/status && echo ok > {OUTPUT_MOUNT}/probe"
    user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *limits]
    return subprocess.run(
        [*wrap, *user, *argv, "/bin/sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's own tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="reprogate-bwrap-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_bubblewrap_runs_under_the_agent_units_privilege_limits(open_dir: Path) -> None:
    # NoNewPrivileges=yes and an empty CapabilityBoundingSet=, as the unit sets them
    limits = ["--no-new-privs", "--bounding-set=-all", "--inh-caps=-all"]
    result = _sandboxed(open_dir, limits=limits)
    assert result.returncode == 0, result.stderr
    assert (open_dir / "output" / "probe").read_text() == "ok\n"


def test_bubblewrap_fails_where_proc_is_covered_as_protect_kernel_tunables_does(
    open_dir: Path,
) -> None:
    # ProtectKernelTunables= mounts /proc/sys read-only over itself; the kernel then
    # refuses bubblewrap a new /proc. The reason the agent unit leaves it out.
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare")
    cover = "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys"
    wrap: tuple[str, ...] = (unshare, "--mount", "--propagation", "private")
    wrap += ("sh", "-c", f'{cover} && exec "$@"', "sh")
    result = _sandboxed(open_dir, limits=["--no-new-privs"], wrap=wrap)
    assert result.returncode != 0
    assert "Can't mount proc" in result.stderr


# --- the rest of deploy/ --------------------------------------------------------------


def test_dockerfile_copies_what_exists_and_runs_as_its_user() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    for line in re.findall(r"^COPY (.+)$", text, re.M):
        *sources, _ = line.split()
        for source in sources:
            assert (ROOT / source).exists(), source
    copied = " ".join(re.findall(r"^COPY (.+)$", text, re.M))
    for needed in (
        "reprogate_agent",
        "deploy/healthcheck.py",
        "deploy/nginx/selfsigned.py",
    ):
        assert needed.rsplit("/", 1)[-1] in copied, needed
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user
    assert user[-1] != "root"
    assert "/var/lib/reprogate/keys" in text


def test_gunicorn_conf_names_only_gunicorn_settings() -> None:
    from gunicorn.config import KNOWN_SETTINGS

    known = {setting.name for setting in KNOWN_SETTINGS}
    namespace = runpy.run_path(str(DEPLOY / "gunicorn.conf.py"))
    # values only: helper functions and classes may sit beside the settings
    names = {
        k
        for k, v in namespace.items()
        if not k.startswith("_") and not callable(v) and not isinstance(v, ModuleType)
    }
    names.discard("annotations")
    assert names, "no setting read"
    assert names <= known, names - known


def test_healthcheck_script_passes_on_200_and_names_the_host() -> None:
    seen: list[str] = []

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers["Host"])
            self.send_response(200 if self.path == "/healthz" else 503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert healthcheck_py.check(f"{base}/healthz", "reprogate.example.com")[0]
        assert not healthcheck_py.check(f"{base}/down", "reprogate.example.com")[0]
        assert seen == ["reprogate.example.com"] * 2
        assert not healthcheck_py.check(f"http://127.0.0.1:{_free_port()}/healthz", "")[
            0
        ]
    finally:
        server.shutdown()
        server.server_close()


def _env_example() -> dict[str, str]:
    values: dict[str, str] = {}
    for number, line in enumerate(
        (DEPLOY / ".env.example").read_text().splitlines(), 1
    ):
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line)
        assert match, f".env.example:{number}: {line!r}"
        assert match.group(1) not in values, f".env.example:{number}: set twice"
        values[match.group(1)] = match.group(2)
    return values


def test_env_files_are_name_value_lines() -> None:
    assert _env_example()
    for path in [*SYSTEMD.glob("*.env.example")]:
        for line in path.read_text().splitlines():
            assert (
                not line
                or line.startswith("#")
                or re.fullmatch(r"[A-Z][A-Z0-9_]*=\S*", line)
            ), (path.name, line)


def test_shell_scripts_parse() -> None:
    scripts = sorted(DEPLOY.rglob("*.sh"))
    assert scripts
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_json_files_parse() -> None:
    for path in DEPLOY.rglob("*.json"):
        json.loads(path.read_text())


def test_python_files_compile() -> None:
    for path in DEPLOY.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


# Each file under deploy/ and the test that checks it.
COVERAGE: tuple[tuple[str, str], ...] = (
    ("nginx/reprogate.conf.template", "test_rendered_template_passes_nginx_t"),
    (
        "nginx/render.py",
        "test_render_command_writes_the_file_and_names_a_missing_variable",
    ),
    ("nginx/selfsigned.py", "test_each_path_has_its_body_limit"),
    ("compose.yaml", "test_compose_file_follows_the_compose_specification"),
    ("make-secrets.sh", "test_make_secrets_writes_every_compose_secret_once"),
    ("Dockerfile", "test_dockerfile_copies_what_exists_and_runs_as_its_user"),
    ("gunicorn.conf.py", "test_gunicorn_conf_names_only_gunicorn_settings"),
    ("healthcheck.py", "test_healthcheck_script_passes_on_200_and_names_the_host"),
    (".env.example", "test_env_files_are_name_value_lines"),
    ("systemd/*.service", "test_systemd_units_pass_systemd_analyze_verify"),
    ("systemd/*.env.example", "test_env_files_are_name_value_lines"),
    ("*.sh", "test_shell_scripts_parse"),
    ("*.json", "test_json_files_parse"),
    ("*.py", "test_python_files_compile"),
)


def _deploy_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "deploy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_every_file_under_deploy_is_validated() -> None:
    k8s = _k8s_reached()
    unchecked = []
    for path in _deploy_files():
        relative = path.relative_to(DEPLOY)
        if path.is_relative_to(K8S):
            if path.resolve() not in k8s:
                unchecked.append(f"{relative} (no kustomization names it)")
            continue
        tests = [test for pattern, test in COVERAGE if relative.match(pattern)]
        if not tests:
            unchecked.append(str(relative))
        for test in tests:
            assert test in globals(), test
    assert unchecked == [], f"files under deploy/ no test checks: {unchecked}"
