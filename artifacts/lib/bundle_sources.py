"""The source folder of ``reprogate bundle build``: its regular files (links,
devices and FIFOs refused, never followed), their sizes and SHA-256, their kinds
(``bundle.json``'s ``kinds`` rules, else the top-level folder), checked against the
server's limits. ``bundle.json``, the manifest template, is read here too."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from artifacts.lib.archive import (
    DEFAULT_LIMITS,
    LookAlikes,
    confusable_problem,
    fold_name,
    path_problems,
)
from artifacts.lib.manifest import KINDS, RESERVED_PATHS
from artifacts.lib.problems import BundleProblem

TEMPLATE_NAME: Final = "bundle.json"
TEMPLATE_KEYS: Final = (
    "rfp",
    "vendor",
    "harness",
    "claims",
    "supersedes",
    "changes",
    "kinds",
    "approach",
    "workloads",
)
MAX_TEMPLATE_BYTES: Final = 4 * 1024 * 1024
CHUNK_SIZE: Final = 1024 * 1024
MAX_STORED_PATH: Final = 500  # the server's BundleFile.path
FOLDER_KINDS: Final[Mapping[str, str]] = {
    "workloads": "workload",
    "environment": "environment",
    "harness": "harness",
    "traces": "trace",
    "cost": "cost_model",
    "reports": "report",
    "containers": "container_image",
    "iac": "iac",
    "runbooks": "runbook",
    "sbom": "sbom",
}


class BuildError(Exception):
    """The bundle cannot be built; ``problems`` names every reason found."""

    def __init__(self, message: str, problems: list[BundleProblem] | None = None):
        super().__init__(message)
        self.message = message
        self.problems = problems or []


@dataclass(frozen=True)
class SourceFile:
    path: str  # the bundle path, POSIX
    source: Path
    size: int
    sha256: str
    kind: str = "other"


# --- the source folder ------------------------------------------------------------


def _entries(root: Path) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``root`` with its bundle path, links not followed."""
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as listing:
            for entry in sorted(listing, key=lambda e: e.name):
                name = f"{prefix}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    stack.append((f"{name}/", Path(entry.path)))
                else:
                    yield name, entry


def _entry_problem(name: str, entry: os.DirEntry[str]) -> BundleProblem | None:
    mode = entry.stat(follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        target = os.readlink(entry.path)
        message = f"Is a symbolic link (to {target!r}); bundles hold regular files."
        return BundleProblem("member_symlink", message, name)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return BundleProblem("member_device", "Is a device node.", name)
    if not stat.S_ISREG(mode):
        return BundleProblem("member_fifo", "Is a FIFO or socket.", name)
    return None


def collect_files(root: Path) -> tuple[list[tuple[str, Path]], list[BundleProblem]]:
    """The regular files under ``root`` (bundle path, file) and every problem."""
    files: list[tuple[str, Path]] = []
    problems: list[BundleProblem] = []
    seen: dict[str, str] = {}
    look_alikes = LookAlikes()
    for name, entry in _entries(root):
        if name == TEMPLATE_NAME:
            continue
        found = [BundleProblem(code, msg, name) for code, msg in path_problems(name)]
        if name in RESERVED_PATHS:
            message = f"{name} is written by the build; remove it from the folder."
            found.append(BundleProblem("name_collision", message, name))
        if (first := seen.setdefault(fold_name(name), name)) != name:
            message = f"Differs from {first!r} only in case or Unicode form."
            found.append(BundleProblem("name_collision", message, name))
        elif (like := look_alikes.first_like(name)) is not None:
            found.append(BundleProblem(*confusable_problem(name, like), name))
        if (problem := _entry_problem(name, entry)) is not None:
            found.append(problem)
        problems.extend(found)
        if not found:
            files.append((name, Path(entry.path)))
    return sorted(files), problems


def hash_file(path: Path) -> tuple[int, str]:
    hasher, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            hasher.update(chunk)
            size += len(chunk)
    return size, hasher.hexdigest()


def _limit_problems(files: list[SourceFile]) -> list[BundleProblem]:
    limits, problems = DEFAULT_LIMITS, []
    for item in files:
        if item.size > limits.max_member_bytes:
            message = f"Has {item.size} bytes; a bundle file may have at most "
            message += f"{limits.max_member_bytes}."
            problems.append(BundleProblem("member_too_large", message, item.path))
    for item in files:
        if len(item.path) > MAX_STORED_PATH:
            message = f"The path is over {MAX_STORED_PATH} characters."
            problems.append(BundleProblem("path_invalid", message, item.path[:200]))
    if len(files) + 2 > limits.max_members:
        message = f"{len(files)} files; a bundle may hold {limits.max_members - 2}."
        problems.append(BundleProblem("too_many_members", message))
    if sum(item.size for item in files) > limits.max_total_bytes:
        message = f"The files add up to more than {limits.max_total_bytes} bytes."
        problems.append(BundleProblem("total_too_large", message))
    return problems


# --- bundle.json and kinds --------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"key {repeated[0]!r} appears twice")
    return dict(pairs)


def load_template(root: Path) -> dict[str, Any]:
    """``bundle.json`` as a dict ({} if absent); unknown keys are refused."""
    path = root / TEMPLATE_NAME
    if not path.exists():
        return {}
    if path.is_symlink() or not path.is_file():
        raise BuildError(f"{TEMPLATE_NAME} must be a regular file, not a link.")
    if path.stat().st_size > MAX_TEMPLATE_BYTES:
        raise BuildError(f"{TEMPLATE_NAME} is larger than {MAX_TEMPLATE_BYTES} bytes.")
    try:
        data = json.loads(path.read_bytes(), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as error:
        raise BuildError(f"{TEMPLATE_NAME} is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise BuildError(f"{TEMPLATE_NAME} must hold a JSON object.")
    unknown = [k for k in data if k not in TEMPLATE_KEYS and not k.startswith("x-")]
    if unknown:
        raise BuildError(
            f"{TEMPLATE_NAME} has unknown keys {', '.join(sorted(unknown))} "
            f"(allowed: {', '.join(TEMPLATE_KEYS)} and x-… extensions; "
            "files and their digests are computed by the build)."
        )
    return data


def kind_rules(template: Mapping[str, Any]) -> dict[str, str]:
    rules = template.get("kinds", {})
    if not isinstance(rules, dict):
        raise BuildError(f"{TEMPLATE_NAME}: kinds must map paths to kinds.")
    bad = {path: kind for path, kind in rules.items() if kind not in KINDS}
    if bad:
        path, kind = next(iter(bad.items()))
        raise BuildError(
            f"{TEMPLATE_NAME}: kinds[{path!r}] is {kind!r}; "
            f"use one of {', '.join(KINDS)}."
        )
    return rules


def kind_for(path: str, rules: Mapping[str, str]) -> str:
    """The kind of ``path``: an exact rule, the longest ``folder/`` rule, else the
    top-level folder's kind, else ``other``."""
    if path in rules:
        return rules[path]
    folders = [rule for rule in rules if rule.endswith("/") and path.startswith(rule)]
    if folders:
        return rules[max(folders, key=len)]
    top = path.split("/", 1)[0] if "/" in path else ""
    return FOLDER_KINDS.get(top, "other")


def _unused_rules(rules: Mapping[str, str], paths: list[str]) -> list[str]:
    return [
        rule
        for rule in rules
        if not any(
            p == rule or (rule.endswith("/") and p.startswith(rule)) for p in paths
        )
    ]


def source_files(root: Path, rules: Mapping[str, str]) -> list[SourceFile]:
    try:
        return _hashed_files(root, rules)
    except OSError as error:
        raise BuildError(f"cannot read {error.filename}: {error.strerror}") from None


def _hashed_files(root: Path, rules: Mapping[str, str]) -> list[SourceFile]:
    found, problems = collect_files(root)
    unused = _unused_rules(rules, [name for name, _ in found])
    problems += [
        BundleProblem("file_missing", "bundle.json names it in kinds; no such file.", r)
        for r in unused
    ]
    if problems:
        raise BuildError(f"The folder {root} cannot be bundled:", problems)
    if not found:
        raise BuildError(f"The folder {root} holds no files to bundle.")
    files = []
    for name, path in found:
        size, digest = hash_file(path)
        files.append(SourceFile(name, path, size, digest, kind_for(name, rules)))
    if problems := _limit_problems(files):
        raise BuildError("The bundle would exceed the server's limits:", problems)
    return files
