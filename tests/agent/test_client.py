"""The agent's HTTP client against a stand-in server: retries with backoff on
connection errors and 5xx, final answers not retried, 401 and 409 told apart,
the token sent only to the configured server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprogate_agent.client import (
    ClientError,
    Conflict,
    RunnerClient,
    ServerRefused,
    TokenRefused,
    Unreachable,
    server_base,
)
from tests.agent.fake_server import FakeServer, Reply

TOKEN = "rgh_" + "t" * 43


def client_of(url: str, pauses: list[float], retries: int = 3) -> RunnerClient:
    return RunnerClient(
        url, TOKEN, retries=retries, backoff=0.5, backoff_max=1.5,
        sleep=pauses.append, connect_timeout=2, read_timeout=5,
    )  # fmt: skip


def test_5xx_is_retried_with_backoff_then_answered(fake: FakeServer) -> None:
    fake.script(
        "heartbeat",
        Reply(503, {"detail": "restarting"}),
        Reply(502, b"<html>bad gateway</html>"),
        Reply(200, {"ok": True}),
    )
    pauses: list[float] = []

    client_of(fake.url, pauses).heartbeat("lab-07@h")

    calls = fake.calls("heartbeat")
    assert len(calls) == 3
    assert pauses == [0.5, 1.0]
    assert calls[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert calls[0].json() == {"worker_name": "lab-07@h"}


def test_5xx_every_time_ends_unreachable(fake: FakeServer) -> None:
    fake.script("heartbeat", Reply(500, {"detail": "boom"}))
    pauses: list[float] = []

    with pytest.raises(Unreachable):
        client_of(fake.url, pauses, retries=3).heartbeat("w")

    assert len(fake.calls("heartbeat")) == 4
    assert pauses == [0.5, 1.0, 1.5]


def test_a_connection_refused_is_retried_then_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    pauses: list[float] = []

    with pytest.raises(Unreachable):
        client_of(f"http://127.0.0.1:{port}", pauses, retries=2).heartbeat("w")

    assert pauses == [0.5, 1.0]


def test_401_is_final_and_says_why(fake: FakeServer) -> None:
    fake.script(
        "hello",
        Reply(401, {"detail": "Revoked.", "code": "host_token_refused"}),
    )
    pauses: list[float] = []

    with pytest.raises(TokenRefused) as caught:
        client_of(fake.url, pauses).hello({"worker_name": "w"})

    assert caught.value.detail == "Revoked."
    assert caught.value.code == "host_token_refused"
    assert len(fake.calls("hello")) == 1
    assert pauses == []


def test_409_and_other_refusals_are_told_apart(fake: FakeServer) -> None:
    fake.script("runs/7/claim", Reply(409, {"claimed": False, "detail": "Not queued."}))
    fake.script(
        "runs/7/report", Reply(409, {"continue": False, "detail": "Cancelled."})
    )
    fake.script("runs/7/running", Reply(400, {"detail": "Bad environment."}))
    fake.script("runs/8/claim", Reply(302, b"", {"Location": "https://evil.example/"}))
    client = client_of(fake.url, [])

    with pytest.raises(Conflict):
        client.claim(7, 1, "w")
    assert client.report(7, 1, 0.5, None) is False
    with pytest.raises(ServerRefused) as caught:
        client.running(7, {"attempt": 1})
    assert caught.value.status == 400
    assert "Bad environment." in str(caught.value)
    with pytest.raises(ServerRefused):
        client.claim(8, 1, "w")
    assert [s.path for s in fake.seen if "evil" in s.path] == []


def test_a_claim_answer_without_a_run_is_a_conflict(fake: FakeServer) -> None:
    fake.script("runs/7/claim", Reply(200, {"claimed": False}))

    with pytest.raises(Conflict):
        client_of(fake.url, []).claim(7, 1, "w")


def test_an_answer_that_is_not_json_is_an_error(fake: FakeServer) -> None:
    fake.script("heartbeat", Reply(200, b"<html>login</html>"))

    with pytest.raises(ClientError, match="not JSON"):
        client_of(fake.url, []).heartbeat("w")


def test_a_download_broken_off_is_fetched_again(fake: FakeServer) -> None:
    data = b"x" * 200_000
    fake.script("runs/7/bundle", Reply(200, data, cut=True), Reply(200, data))
    got: list[bytes] = []
    pauses: list[float] = []

    def consume(headers: dict[str, str], chunks: Iterator[bytes]) -> None:
        got.clear()
        got.extend(chunks)

    client_of(fake.url, pauses).download(
        "/api/v1/runner/runs/7/bundle?attempt=1", consume
    )

    assert b"".join(got) == data
    assert len(fake.calls("runs/7/bundle")) == 2
    assert fake.calls("runs/7/bundle")[0].path.endswith("?attempt=1")


@pytest.mark.parametrize(
    "url",
    ["https://evil.example/api/v1/runner/runs/7/bundle", "//evil.example/x",
     "/admin/", "/api/v1/other/"],
)  # fmt: skip
def test_the_bundle_url_must_be_of_the_runner_api(fake: FakeServer, url: str) -> None:
    with pytest.raises(ClientError, match="bundle URL"):
        client_of(fake.url, []).download(url, lambda h, c: None)

    assert fake.seen == []


def test_outputs_are_streamed_up_under_a_quoted_path(
    fake: FakeServer, tmp_path: Path
) -> None:
    local = tmp_path / "0"
    local.write_bytes(b'{"metrics": []}')
    fake.script(
        "runs/7/outputs/logs/a%20b.json",
        Reply(503, {}),
        Reply(201, {"path": "logs/a b.json", "sha256": "x", "size": 15}),
    )

    answer = client_of(fake.url, []).upload(7, 2, "logs/a b.json", local)

    assert answer["path"] == "logs/a b.json"
    calls = fake.calls("runs/7/outputs/logs/a%20b.json")
    assert [c.body for c in calls] == [b'{"metrics": []}'] * 2  # sent again whole
    assert calls[0].path.endswith("?attempt=2")
    assert calls[0].headers["Content-Type"] == "application/octet-stream"


@pytest.mark.parametrize(
    ("url", "wrong"),
    [("http://reprogate.example.com", "plain HTTP"), ("https://", "not an https"),
     ("https://x.example/?next=/", "query")],
)  # fmt: skip
def test_the_server_url_is_checked(url: str, wrong: str) -> None:
    with pytest.raises(ValueError, match=wrong):
        server_base(url)


def test_plain_http_on_loopback_and_a_path_prefix_are_accepted() -> None:
    assert server_base("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    assert server_base("https://x.example/rg/") == "https://x.example/rg"
