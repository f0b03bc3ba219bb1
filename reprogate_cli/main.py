"""``reprogate``: talks to a ReproGate server with nothing but the standard library.

Later issues add ``bundle build|verify``, ``submit``, ``parse`` and ``evidence verify``.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8000"


class CliError(Exception):
    pass


def _request(
    url: str, path: str, *, token: str | None = None, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    if not url.startswith(("http://", "https://")):
        raise CliError(f"--url must start with http:// or https://, not {url!r}")
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(  # noqa: S310 - scheme checked above
        url.rstrip("/") + path, data=data, method="POST" if data else "GET"
    )
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Token {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise CliError(_describe_error(exc)) from None
    except urllib.error.URLError as exc:
        raise CliError(f"cannot reach {url}: {exc.reason}") from None


def _describe_error(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read())
    except ValueError:
        return f"HTTP {exc.code}"
    lines = [f"HTTP {exc.code} {body.get('code', '')}: {body.get('message', '')}"]
    lines += [
        f"  - {p.get('path', '')}: {p.get('message', '')}"
        for p in body.get("problems", [])
    ]
    return "\n".join(lines)


def cmd_login(args: argparse.Namespace) -> int:
    password = os.environ.get("REPROGATE_PASSWORD") or getpass.getpass("Password: ")
    result = _request(
        args.url,
        "/api/v1/auth/token/",
        body={"username": args.username, "password": password, "name": args.name},
    )
    print(result["token"])
    print(f"expires {result['expires_at']}", file=sys.stderr)
    return 0


def cmd_whoami(args: argparse.Namespace) -> int:
    if not args.token:
        raise CliError("give --token or set REPROGATE_TOKEN")
    me = _request(args.url, "/api/v1/me/", token=args.token)
    roles = ", ".join(f"{m['role']}@{m['organisation']}" for m in me["memberships"])
    print(f"{me['username']} ({roles or 'no roles'})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    try:
        installed = version("reprogate")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        installed = "unknown"
    parser = argparse.ArgumentParser(prog="reprogate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"reprogate {installed}")
    parser.add_argument(
        "--url", default=os.environ.get("REPROGATE_URL", DEFAULT_URL), help="server URL"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    login = commands.add_parser("login", help="print a new API token")
    login.add_argument("--username", required=True)
    login.add_argument("--name", default="reprogate CLI", help="label for the token")
    login.set_defaults(handler=cmd_login)
    whoami = commands.add_parser("whoami", help="check a token")
    whoami.add_argument("--token", default=os.environ.get("REPROGATE_TOKEN"))
    whoami.set_defaults(handler=cmd_whoami)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except CliError as exc:
        print(f"reprogate: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
