"""Container health check: GET the app's /healthz and exit 0 on 200, 1 otherwise.

    python deploy/healthcheck.py URL [HOST]

e.g. ``http://127.0.0.1:8000/healthz reprogate.example.com``. The request names
HOST as its Host, one the app serves (DJANGO_ALLOWED_HOSTS: it answers 400 to any
other), and says it came over HTTPS, as nginx does. Stdlib only, so it costs no
Django start-up.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request


def check(url: str, host: str, timeout: float = 5.0) -> tuple[bool, str]:
    headers = {"X-Forwarded-Proto": "https"}
    if host:
        headers["Host"] = host
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (our own URL)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.status == 200, f"{response.status}"
    except urllib.error.HTTPError as error:
        return False, f"{error.code} {error.read(500).decode('utf-8', 'replace')}"
    except OSError as error:
        return False, str(error)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not 1 <= len(args) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    url, host = args[0], args[1] if len(args) == 2 else ""
    ok, detail = check(url, host)
    if not ok:
        print(f"healthcheck: {url}: {detail}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
