"""Render reprogate.conf.template as ``envsubst '<its variables>'`` does.

Only the variables the template's header lists are replaced (nginx's own
``$variables`` stay); each must be given, non-empty, as a ``NAME=value`` argument::

    python deploy/nginx/render.py -o /etc/nginx/conf.d/reprogate.conf \\
        REPROGATE_SERVER_NAME=reprogate.example.com REPROGATE_LISTEN_HTTPS=443 ...

(From the environment instead: the template header's ``envsubst`` line.)

Stdlib only: runs on a proxy host with no ReproGate installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path

TEMPLATE = Path(__file__).with_name("reprogate.conf.template")
VARIABLES = (
    "REPROGATE_SERVER_NAME",
    "REPROGATE_LISTEN_HTTPS",
    "REPROGATE_LISTEN_HTTP",
    "REPROGATE_UPSTREAM",
    "REPROGATE_TLS_CERT",
    "REPROGATE_TLS_KEY",
    "REPROGATE_STATIC_ROOT",
)
# The argument envsubst takes to replace exactly these.
ENVSUBST_LIST = " ".join(f"${{{name}}}" for name in VARIABLES)
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# A value goes into one nginx directive argument: no separator, quote or brace.
_UNSAFE = re.compile(r"[\s;{}'\"#$\\]")


class RenderError(ValueError):
    pass


def render(values: Mapping[str, str], template: str | None = None) -> str:
    """The template with each of VARIABLES replaced by its value."""
    text = TEMPLATE.read_text(encoding="utf-8") if template is None else template
    for name in VARIABLES:
        value = values.get(name, "")
        if not value:
            raise RenderError(f"{name} is not set.")
        if _UNSAFE.search(value):
            raise RenderError(f"{name}: {value!r} holds a space, quote, brace, ; or $.")

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name in VARIABLES else match.group(0)

    return _REFERENCE.sub(substitute, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-o", "--output", help="file to write (default: stdout)")
    parser.add_argument("--template", default=str(TEMPLATE))
    parser.add_argument("assignments", nargs="*", metavar="NAME=value")
    args = parser.parse_args(argv)
    values: dict[str, str] = {}
    for item in args.assignments:
        name, sep, value = item.partition("=")
        if not sep or name not in VARIABLES:
            parser.error(f"{item!r}: expected one of {', '.join(VARIABLES)}=value")
        values[name] = value
    try:
        text = render(values, Path(args.template).read_text(encoding="utf-8"))
    except RenderError as error:
        print(f"render.py: {error}", file=sys.stderr)
        return 2
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
