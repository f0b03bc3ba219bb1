#!/usr/bin/env python3
"""The embedded rollback hook: switches the I/O scheduler of the run's block
devices (the demo's scratch loop device), which the environment capture records
(``block[].scheduler``), so a ``rollback`` scenario works on any Linux host
with a loop device. A lab with real drivers or firmware names its own hook.

The runner calls it as every rollback hook (docs/lab.md):

    switch_hook.py switch '{"to": "mq-deadline", "run": "<run id>",
                            "devices": {"reprogate.dev/block=scratch0": "/dev/loop0"}}'

``to`` is the scheduler's name (``none``, ``mq-deadline``, ``kyber``…). Each
block device in ``devices`` (the host's nodes) gets that scheduler; the hook
prints what it switched as JSON and exits 0, or says why not on stderr and
exits 1 (2: a wrong call). Standard library only: it runs with any ``python3``.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

SYS = Path("/sys")


def _scheduler(path: Path) -> str | None:
    match = re.search(r"\[(\S+)\]", path.read_text())
    return match.group(1) if match else None


def _queue(node: str) -> Path:
    """``/sys/dev/block/MAJ:MIN/queue/scheduler`` of a block device node."""
    info = os.stat(node)
    if not stat.S_ISBLK(info.st_mode):
        raise ValueError(f"{node} is not a block device")
    major, minor = os.major(info.st_rdev), os.minor(info.st_rdev)
    return SYS / "dev" / "block" / f"{major}:{minor}" / "queue" / "scheduler"


def switch(argument: dict[str, object]) -> dict[str, dict[str, str | None]]:
    wanted = argument.get("to")
    if not isinstance(wanted, str) or not re.fullmatch(r"[a-z0-9-]{1,32}", wanted):
        raise ValueError(f"'to' must name a scheduler, not {wanted!r}")
    devices = argument.get("devices")
    if not isinstance(devices, dict) or not devices:
        raise ValueError("no block device to switch (the argument's 'devices')")
    switched: dict[str, dict[str, str | None]] = {}
    for name, node in sorted(devices.items()):
        queue = _queue(str(node))
        offered = queue.read_text().replace("[", "").replace("]", "").split()
        if wanted not in offered:
            raise ValueError(f"{node} offers {', '.join(offered)}, not {wanted}")
        before = _scheduler(queue)
        queue.write_text(wanted)
        after = _scheduler(queue)
        if after != wanted:
            raise ValueError(f"{node} kept the scheduler {after}")
        switched[str(name)] = {"node": str(node), "from": before, "to": after}
    return switched


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "switch":
        print("usage: switch_hook.py switch '<json argument>'", file=sys.stderr)
        return 2
    try:
        argument = json.loads(argv[2])
        if not isinstance(argument, dict):
            raise ValueError("the argument must be a JSON object")
        print(json.dumps({"switched": switch(argument)}, sort_keys=True))
    except (OSError, ValueError) as error:
        print(f"switch failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
