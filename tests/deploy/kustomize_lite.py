"""The part of kustomize that deploy/k8s/ uses, so CI renders it with no binary.

Supported kustomization fields: ``resources`` (files, and folders holding a
kustomization), ``namespace``, ``labels`` (``pairs`` on metadata only, no selectors
or templates), ``images`` (``name``, ``newName``, ``newTag``) and ``patches`` given
by ``path`` (strategic merge patches naming their target by apiVersion, kind and
metadata.name). Any other field is refused, so a kustomization that grows past this
subset fails the test instead of being rendered wrongly. Where ``kubectl kustomize``
exists, the tests compare the two renderings.

The strategic merge is the minimal one: maps merge key by key, a list of maps that
all have a ``name`` merges item by item on it (containers, volumes, env, ports…),
any other list is replaced, ``null`` deletes a key.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

SUPPORTED = frozenset(
    {"apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"}
)
# Kinds that live outside namespaces (kustomize leaves their namespace unset).
CLUSTER_KINDS = frozenset(
    {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume"}
)
Resource = dict[str, Any]


class KustomizeError(ValueError):
    pass


def _load_all(path: Path) -> list[Resource]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def _key(resource: Resource) -> tuple[str, str, str]:
    return (resource["apiVersion"], resource["kind"], resource["metadata"]["name"])


def merge(base: Any, patch: Any) -> Any:
    """``patch`` applied to ``base`` as a (minimal) strategic merge patch."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = merge(merged[key], value)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(patch, list) and _named(base + patch):
        merged_list = [copy.deepcopy(item) for item in base]
        names = [item["name"] for item in merged_list]
        for item in patch:
            if item["name"] in names:
                index = names.index(item["name"])
                merged_list[index] = merge(merged_list[index], item)
            else:
                merged_list.append(copy.deepcopy(item))
        return merged_list
    return copy.deepcopy(patch)


def _named(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(i, dict) and "name" in i for i in items)


def _containers(resource: Resource) -> list[dict[str, Any]]:
    spec = resource.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    if resource["kind"] == "CronJob":
        pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def _set_image(resource: Resource, images: list[dict[str, str]]) -> None:
    for container in _containers(resource):
        name, _, tag = container["image"].partition(":")
        for image in images:
            if image["name"] == name:
                name = image.get("newName", name)
                tag = image.get("newTag", tag)
                container["image"] = f"{name}:{tag}" if tag else name


def build(directory: Path) -> list[Resource]:
    """The resources ``kustomize build directory`` would print (in any order)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - SUPPORTED
    if unknown:
        raise KustomizeError(f"{directory}: unsupported fields {sorted(unknown)}")
    resources: list[Resource] = []
    for entry in kustomization.get("resources", []):
        target = (directory / entry).resolve()
        resources += build(target) if target.is_dir() else _load_all(target)
    by_key = {_key(r): r for r in resources}
    if len(by_key) != len(resources):
        raise KustomizeError(f"{directory}: two resources share a name")
    for patch_entry in kustomization.get("patches", []):
        if set(patch_entry) != {"path"}:
            raise KustomizeError(f"{directory}: only patches by path: {patch_entry}")
        for patch in _load_all(directory / patch_entry["path"]):
            if _key(patch) not in by_key:
                raise KustomizeError(f"{patch_entry['path']}: no target {_key(patch)}")
            by_key[_key(patch)] = merge(by_key[_key(patch)], patch)
    rendered = list(by_key.values())
    for label_set in kustomization.get("labels", []):
        if set(label_set) != {"pairs"}:
            raise KustomizeError(f"{directory}: labels take pairs only: {label_set}")
        for resource in rendered:
            labels = resource["metadata"].setdefault("labels", {})
            labels.update(label_set["pairs"])
    for resource in rendered:
        _set_image(resource, kustomization.get("images", []))
        if "namespace" in kustomization and resource["kind"] not in CLUSTER_KINDS:
            resource["metadata"]["namespace"] = kustomization["namespace"]
    return rendered
