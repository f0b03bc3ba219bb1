"""``reprogate``: builds, verifies and submits signed artifact bundles and talks
to a ReproGate server, with the standard library and ``cryptography`` (and numpy
for the gate engine) only (``DESCRIPTION`` is what ``reprogate --help`` says)."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprogate_cli.evidence_verify import add_evidence_commands
from reprogate_cli.gate import add_gate_commands
from reprogate_cli.parse import add_parse_command

if TYPE_CHECKING:
    import urllib.error

    from artifacts.lib.problems import BundleProblem

# A command imports what it needs when it runs (bundles: ``cryptography``,
# evidence and gates: numpy, the API: urllib): the lab runs ``reprogate parse``
# once per output file and should not pay for the others.

DEFAULT_URL = "http://127.0.0.1:8000"  # scripts/run's default address
MAX_LIST_PAGES = 1000  # of the server's largest page (500 rows): 500,000 rows
DESCRIPTION = f"""\
Builds, verifies and submits signed artifact bundles and talks to a ReproGate
server, with the Python standard library and cryptography only (numpy too for
gate evaluate); no Django.

  login, whoami          get and check an API token
  key register           register a signing key of your vendor organisation
  bundle build, verify   sign a folder into a bundle; check one offline
  submit                 upload a bundle to an RFP
  evidence verify        check an escrow evidence package offline
  parse                  the benchmark runner's output parsers
  gate evaluate          recompute acceptance-gate verdicts offline (numpy)

The server is --url, else $REPROGATE_URL, else {DEFAULT_URL} (where
scripts/run serves by default).
Exit codes: 0 success; 1 the bundle has problems (each is printed); 2 usage,
network or server errors."""


def default_url() -> str:
    return os.environ.get("REPROGATE_URL") or DEFAULT_URL


def _add_url_option(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--url`` before or after the command: ``reprogate login --url …`` and
    ``reprogate --url … login`` mean the same (the one after the command wins)."""
    parser.add_argument(
        "--url",
        metavar="URL",
        # the command's own option only overrides what the top level found
        default=default_url() if top else argparse.SUPPRESS,
        help=f"server URL (default: $REPROGATE_URL, else {DEFAULT_URL})",
    )


class CliError(Exception):
    pass


class ApiError(CliError):
    """The server answered with an error: its HTTP status and ``code``."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.http_status = status
        self.code = code


def _request(
    url: str, path: str, *, token: str | None = None, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    if not url.startswith(("http://", "https://")):
        raise CliError(f"--url must start with http:// or https://, not {url!r}")
    import urllib.error
    import urllib.request

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
        raise _api_error(exc) from None
    except urllib.error.URLError as exc:
        raise CliError(f"cannot reach {url}: {exc.reason}") from None


def _list_rows(url: str, path: str, *, token: str) -> Iterator[dict[str, Any]]:
    """Every row of an API list, page after page: each page's ``results``, then
    its ``next`` link (asked of ``url``'s server, whatever host the link names:
    the token goes nowhere else), until a page has none."""
    from urllib.parse import urlsplit, urlunsplit

    for _ in range(MAX_LIST_PAGES):
        page: Any = _request(url, path, token=token)
        if not isinstance(page, dict) or not isinstance(page.get("results"), list):
            raise CliError(f"{path}: the server's answer is not a page of a list")
        yield from (row for row in page["results"] if isinstance(row, dict))
        link = page.get("next")
        if not isinstance(link, str) or not link:
            return
        parts = urlsplit(link)
        base_path = urlsplit(url).path.rstrip("/")
        path = urlunsplit(("", "", parts.path.removeprefix(base_path), parts.query, ""))
    raise CliError(f"{path}: more than {MAX_LIST_PAGES} pages")


def _api_error(exc: urllib.error.HTTPError) -> ApiError:
    try:
        body = json.loads(exc.read())
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return ApiError(f"HTTP {exc.code}", status=exc.code, code="")
    code = str(body.get("code", ""))
    lines = [f"HTTP {exc.code} {code}: {body.get('message', '')}"]
    lines += [
        f"  - {p.get('path', '')}: {p.get('message', '')}"
        for p in body.get("problems", [])
        if isinstance(p, dict)
    ]
    return ApiError("\n".join(lines), status=exc.code, code=code)


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


def _token(args: argparse.Namespace) -> str:
    token = args.token or os.environ.get("REPROGATE_TOKEN")
    if not token:
        raise CliError("give --token or set REPROGATE_TOKEN")
    return token


def cmd_key_register(args: argparse.Namespace) -> int:
    """Register a public key for the caller's vendor organisation. The same key
    registered before (and not revoked) is no error: scripts may run this again."""
    token = _token(args)
    try:
        line = args.public_key.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise CliError(f"{args.public_key}: {exc.strerror}") from None
    body: dict[str, Any] = {"public_key": line}
    if args.organisation:
        body["organisation"] = args.organisation
    try:
        key = _request(args.url, "/api/v1/signing-keys/", token=token, body=body)
    except ApiError as exc:
        if exc.code != "key_duplicate":
            raise
        known = _registered_key(args, token, line)
        if known is None or known.get("revoked_at"):
            raise
        print(f"already registered {known['fingerprint']} ({known['organisation']})")
        return 0
    print(f"registered {key['fingerprint']} ({key['organisation']})")
    return 0


def _registered_key(
    args: argparse.Namespace, token: str, line: str
) -> dict[str, Any] | None:
    """The organisation's key with the fingerprint of ``line``, if listed."""
    from artifacts.lib.signatures import SignatureError
    from artifacts.lib.signatures.sshkeys import parse_public_key_line

    try:
        fingerprint = parse_public_key_line(line).fingerprint
    except SignatureError:
        return None
    for key in _list_rows(args.url, "/api/v1/signing-keys/", token=token):
        if key.get("fingerprint") == fingerprint and (
            not args.organisation or key.get("organisation") == args.organisation
        ):
            return key
    return None


def _add_key_commands(commands: Any) -> None:
    key = commands.add_parser("key", help="register a signing key with the server")
    actions = key.add_subparsers(dest="key_command", required=True)
    register = actions.add_parser(
        "register",
        help="register a public key for your vendor organisation",
        description=(
            "Registers an OpenSSH public key (.pub) as a signing key of your "
            "vendor organisation (POST /api/v1/signing-keys/), so that bundles "
            "it signs are accepted. A key already registered is reported, exit 0."
        ),
    )
    register.add_argument("public_key", type=Path, metavar="KEY.pub")
    register.add_argument("--token", help="API token (or REPROGATE_TOKEN)")
    register.add_argument(
        "--organisation", help="vendor slug, if you act for several vendors"
    )
    _add_url_option(register)
    register.set_defaults(handler=cmd_key_register)


def _print_problems(problems: Sequence[BundleProblem]) -> None:
    for problem in problems:
        where = f"{problem.path}: " if problem.path else ""
        print(f"  {problem.code}  {where}{problem.message}", file=sys.stderr)


def cmd_bundle_build(args: argparse.Namespace) -> int:
    from artifacts.lib import bundle_build

    key = bundle_build.load_key(args.key)
    created = bundle_build.parse_created(args.created) if args.created else None
    result = bundle_build.build_bundle(
        args.directory,
        key=key,
        output=args.output,
        rfp=args.rfp,
        vendor=args.vendor,
        created=created,
    )
    print(f"wrote {result.output} ({result.size} bytes, {len(result.files)} files)")
    print(f"sha256 {result.sha256}")
    print(f"signed by {result.fingerprint} {key.public.comment}".rstrip())
    return 0


def _parse_at(text: str | None) -> datetime | None:
    from artifacts.lib import bundle_build

    if text is None:
        return None
    try:
        return bundle_build.parse_created(text)
    except bundle_build.BuildError:
        raise CliError(f"--at {text!r} is not an RFC 3339 time with a zone") from None


def cmd_bundle_verify(args: argparse.Namespace) -> int:
    from artifacts.lib import bundle_verify

    if not args.file.is_file():
        raise CliError(f"{args.file} is not a file")
    signers = bundle_verify.read_allowed_signers(args.allowed_signers)
    for warning in signers.warnings:
        print(f"reprogate: {args.allowed_signers} {warning}", file=sys.stderr)
    report = bundle_verify.verify_bundle(
        args.file,
        signers,
        principal=args.principal,
        rfp=args.rfp,
        at=_parse_at(args.at),
    )
    print(bundle_verify.render(report))
    return 0 if report.ok else 1


def cmd_submit(args: argparse.Namespace) -> int:
    from reprogate_cli import submit

    token = _token(args)
    outcome, response = submit.submit(
        args.file, url=args.url, token=token, rfp=args.rfp
    )
    lines, status = submit.render(outcome, response)
    print("\n".join(lines))
    return status


def _add_bundle_commands(commands: Any) -> None:
    bundle = commands.add_parser("bundle", help="build or verify a signed bundle")
    actions = bundle.add_subparsers(dest="bundle_command", required=True)
    build = actions.add_parser(
        "build",
        help="sign a folder into a bundle (tar.gz)",
        description=(
            "Lists every file of DIR with its size, SHA-256 and kind in "
            "manifest.json (bundle.json in DIR is the template), signs it and "
            "writes a reproducible tar.gz. SOURCE_DATE_EPOCH fixes the times."
        ),
    )
    build.add_argument("directory", type=Path, metavar="DIR")
    build.add_argument(
        "--key", required=True, type=Path, metavar="KEY", help="SSH private key"
    )
    build.add_argument("-o", "--output", required=True, type=Path, metavar="OUT.tar.gz")
    build.add_argument("--rfp", help="RFP reference (overrides bundle.json)")
    build.add_argument("--vendor", help="vendor slug (overrides bundle.json)")
    build.add_argument(
        "--created", metavar="TIME", help="manifest time, RFC 3339 (default: now)"
    )
    build.set_defaults(handler=cmd_bundle_build)
    verify = actions.add_parser("verify", help="check a bundle offline")
    verify.add_argument("file", type=Path, metavar="FILE")
    verify.add_argument(
        "--allowed-signers",
        required=True,
        type=Path,
        metavar="FILE",
        help="ssh-keygen allowed_signers file (e.g. exported by the server)",
    )
    verify.add_argument("--principal", help="signer identity (default: the vendor)")
    verify.add_argument("--rfp", help="also require this RFP reference")
    verify.add_argument(
        "--at", metavar="TIME", help="check key validity at this time (default: now)"
    )
    verify.set_defaults(handler=cmd_bundle_verify)


def _add_submit_command(commands: Any) -> None:
    upload = commands.add_parser("submit", help="upload a bundle to an RFP")
    upload.add_argument("file", type=Path, metavar="FILE")
    _add_url_option(upload)
    upload.add_argument("--token", help="API token (or REPROGATE_TOKEN)")
    upload.add_argument("--rfp", required=True, help="RFP reference or id")
    upload.set_defaults(handler=cmd_submit)


class _Version(argparse.Action):
    """``--version``: the installed package's version, looked up (by
    ``importlib.metadata``, slow to import) only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("reprogate")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            installed = "unknown"
        print(f"reprogate {installed}")  # on stdout, as argparse's "version" does
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reprogate",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    _add_url_option(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True)
    login = commands.add_parser(
        "login", help="print a new API token (password: $REPROGATE_PASSWORD or asked)"
    )
    login.add_argument("--username", required=True)
    login.add_argument("--name", default="reprogate CLI", help="label for the token")
    _add_url_option(login)
    login.set_defaults(handler=cmd_login)
    whoami = commands.add_parser("whoami", help="check a token")
    whoami.add_argument("--token", default=os.environ.get("REPROGATE_TOKEN"))
    _add_url_option(whoami)
    whoami.set_defaults(handler=cmd_whoami)
    _add_bundle_commands(commands)
    _add_key_commands(commands)
    _add_submit_command(commands)
    add_evidence_commands(commands)
    add_parse_command(commands)
    add_gate_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except CliError as exc:
        print(f"reprogate: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`reprogate parse … | head`)
        # Point stdout at /dev/null so the interpreter's final flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a killed pipeline member
    except Exception as exc:
        status = _command_error(exc)
        if status is None:
            raise
        return status


def _command_error(exc: Exception) -> int | None:
    """The exit status for a bundle or submit command's own errors (printed),
    None for any other exception. Those modules are imported here, not at the
    top: a command that raised one of their errors has imported them already."""
    from artifacts.lib import bundle_build, bundle_verify
    from reprogate_cli import submit

    if isinstance(exc, bundle_build.BuildError):
        print(f"reprogate: {exc.message}", file=sys.stderr)
        _print_problems(exc.problems)
        return 1 if exc.problems else 2
    if isinstance(exc, submit.SubmitError | bundle_verify.AllowedSignersError):
        print(f"reprogate: {exc}", file=sys.stderr)
        return 2
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
