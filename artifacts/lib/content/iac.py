"""``iac``: infrastructure-as-code templates, recognised by form and parsed.

- Terraform: ``.tf`` with a top-level block (``resource``, ``module``,
  ``provider``, ``variable``, ``output``, ``data``, ``locals``, ``terraform``)
  and balanced braces; ``.tf.json`` a JSON object with one of those keys;
  ``.tfvars`` ``name = value`` lines.
- Kubernetes: YAML (every document) or JSON objects with ``apiVersion`` and ``kind``.
- Helm: ``Chart.yaml`` with ``apiVersion``, ``name`` and ``version``; the files
  below its folder are the chart's (``templates/`` are Go templates and other
  files only non-empty; YAML outside ``templates/`` must parse).
- Ansible: a YAML playbook, a list of plays each with ``hosts`` or
  ``import_playbook``.
Notes (``.md``, ``.txt``) are passed over. YAML is read with the safe loader, at
most ``MAX_IAC_BYTES`` a file and ``MAX_DOCUMENTS`` documents; only top-level keys
are looked at, so anchors and aliases cost nothing.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence
from typing import Any, Final

import yaml

from artifacts.lib.content.common import KindResult, Reader, read_text
from artifacts.lib.manifest import ManifestFile

MAX_IAC_BYTES: Final = 1024 * 1024
MAX_DOCUMENTS: Final = 1000
TF_BLOCKS: Final = (
    "resource", "module", "provider", "variable", "output", "data", "locals",
    "terraform",
)  # fmt: skip
_TF_BLOCK = re.compile(rf"^\s*(?:{'|'.join(TF_BLOCKS)})\b[^\n{{]*\{{", re.MULTILINE)
_TF_NOISE = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TFVARS = re.compile(r"^\s*[A-Za-z_][\w-]*\s*=", re.MULTILINE)
NOTES: Final = (".md", ".txt", ".rst")
YAML: Final = (".yaml", ".yml")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Unparseable(ValueError):
    pass


def _yaml(text: str) -> list[Any]:
    try:
        documents: list[Any] = []
        for document in yaml.load_all(text, Loader=_Loader):
            if len(documents) >= MAX_DOCUMENTS:
                raise Unparseable(f"more than {MAX_DOCUMENTS} documents")
            if document is not None:
                documents.append(document)
        return documents
    except (yaml.YAMLError, RecursionError) as error:
        raise Unparseable(
            str(error).splitlines()[0] if str(error) else "YAML"
        ) from error


def _kubernetes(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and isinstance(document.get("apiVersion"), str)
        and isinstance(document.get("kind"), str)
    )


def _playbook(documents: list[Any]) -> bool:
    plays = documents[0] if len(documents) == 1 else None
    return (
        isinstance(plays, list)
        and bool(plays)
        and all(
            isinstance(p, dict) and ("hosts" in p or "import_playbook" in p)
            for p in plays
        )
    )


def _terraform(text: str) -> str | None:
    if not _TF_BLOCK.search(text):
        return None
    code = _TF_NOISE.sub("", text)
    depth = 0
    for char in code:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            break
    if depth != 0:
        raise Unparseable("its braces do not balance")
    return "terraform"


def _json_form(name: str, text: str) -> str | None:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise Unparseable("not JSON") from error
    if name.endswith(".tf.json"):
        keys = set(document) if isinstance(document, dict) else set()
        return "terraform" if keys & set(TF_BLOCKS) else None
    return "kubernetes" if _kubernetes(document) else None


def _yaml_form(name: str, text: str, in_chart: bool) -> str | None:
    documents = _yaml(text)
    if posixpath.basename(name) == "Chart.yaml":
        chart = documents[0] if len(documents) == 1 else None
        ok = isinstance(chart, dict) and {"apiVersion", "name", "version"} <= set(chart)
        return "helm" if ok else None
    if in_chart:
        return "helm"
    if documents and all(_kubernetes(d) for d in documents):
        return "kubernetes"
    return "ansible" if documents and _playbook(documents) else None


def _form(file: ManifestFile, text: str, charts: Sequence[str]) -> str | None:
    name = file.path
    chart = next((c for c in charts if name.startswith(c + "/")), None)
    if chart is not None:  # a Helm chart's file: its YAML must parse
        if name.startswith(chart + "/templates/") or not name.endswith(YAML):
            return "helm"
        return _yaml_form(name, text, in_chart=True)
    if name.endswith(".tf"):
        return _terraform(text)
    if name.endswith(".tfvars"):
        return "terraform" if _TFVARS.search(text) else None
    if name.endswith(".json"):
        return _json_form(name, text)
    if name.endswith(YAML):
        return _yaml_form(name, text, in_chart=False)
    return None


def check_iac(files: Sequence[ManifestFile], read: Reader) -> dict[str, Any]:
    result = KindResult("iac", files=len(files))
    charts = [
        posixpath.dirname(f.path)
        for f in files
        if posixpath.basename(f.path) == "Chart.yaml"
    ]
    for file in files:
        if file.path.lower().endswith(NOTES):
            continue
        problems = len(result.problems)
        text = read_text(result, file, read, MAX_IAC_BYTES)
        if len(result.problems) > problems:
            continue
        if not text.strip():
            result.problem("iac_empty", "The file is empty.", file.path)
            continue
        try:
            form = _form(file, text, charts)
        except Unparseable as error:
            result.problem("iac_unparseable", f"It does not parse: {error}.", file.path)
            continue
        if form is None:
            message = "Not a Terraform, Kubernetes, Helm or Ansible template."
            result.problem("iac_unrecognised", message, file.path)
        else:
            result.items.append({"path": file.path, "format": form})
    return result.as_dict()
