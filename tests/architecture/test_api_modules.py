"""Where an API module's serializers live, and where its routes are listed.

A serializer that one API class uses is nested in that class (its
``InputSerializer``/``OutputSerializer``, or a helper serializer inside it); one
that two or more API classes of a module use sits at the module's top level; one
that API modules of several files use sits in ``<app>/api/serializers.py``. "Uses"
follows the module's top-level names: an API class uses what it names, and what
the helpers and serializers it names name in turn, across imports from other
``<app>/api/`` modules. Read from the source with ``ast`` (nothing is imported),
so a test can feed the rule a synthetic module.

Each app lists its API routes in ``<app>/api/urls.py``: no other ``api`` module
has ``urlpatterns``."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from tests.architecture.imports import ROOT

APPS = ("accounts", "procurement", "artifacts", "benchmarks", "gates")
SHARED = "serializers"  # <app>/api/serializers.py
# The API's infrastructure, not an operation's: the one error shape and the
# paginator every list uses.
INFRASTRUCTURE = frozenset({"accounts.api.errors", "accounts.api.pagination"})

Node = tuple[str, str]  # (dotted module, top-level name)


@dataclass
class Module:
    """One api module's top-level names: what each names, and where the names
    it imports from other api modules come from."""

    name: str
    defs: dict[str, ast.stmt] = field(default_factory=dict)
    imported: dict[str, Node] = field(default_factory=dict)


def _base_names(node: ast.ClassDef) -> list[str]:
    """``serializers.Serializer`` -> ``Serializer``; ``APIView`` -> ``APIView``."""
    names = []
    for base in node.bases:
        if isinstance(base, ast.Attribute):
            names.append(base.attr)
        elif isinstance(base, ast.Name):
            names.append(base.id)
    return names


def is_serializer(node: ast.stmt) -> bool:
    return isinstance(node, ast.ClassDef) and (
        node.name.endswith("Serializer")
        or any(b.endswith("Serializer") for b in _base_names(node))
    )


def is_api(node: ast.stmt) -> bool:
    """An API class: ``<Entity><Verb>Api``, or a subclass of an ``APIView`` or
    of another API class (``…Api``, ``…ApiView``)."""
    if not isinstance(node, ast.ClassDef):
        return False
    names = [node.name, *_base_names(node)]
    return any(n.endswith(("Api", "ApiView", "APIView")) for n in names)


def parse(name: str, source: str) -> Module:
    tree = ast.parse(source)
    module = Module(name)
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef | ast.FunctionDef):
            module.defs[statement.name] = statement
        elif isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = (
                statement.targets
                if isinstance(statement, ast.Assign)
                else [statement.target]
            )
            for target in targets:
                for named in ast.walk(target):
                    if isinstance(named, ast.Name):
                        module.defs[named.id] = statement
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                module.imported[alias.asname or alias.name] = (node.module, alias.name)
    return module


class Graph:
    """The api modules' top-level names and what each one names."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.modules = {name: parse(name, text) for name, text in sources.items()}

    def resolve(self, module: str, name: str) -> Node | None:
        """Where ``name`` as ``module`` sees it is defined, if in an api module."""
        seen: set[Node] = set()
        while (module, name) not in seen:
            seen.add((module, name))
            found = self.modules.get(module)
            if found is None:
                return None
            if name in found.defs:
                return module, name
            if name not in found.imported:
                return None
            module, name = found.imported[name]
        return None

    def node(self, at: Node) -> ast.stmt:
        return self.modules[at[0]].defs[at[1]]

    def names(self, at: Node) -> set[Node]:
        """The api modules' top-level names that ``at`` names."""
        found = set()
        for node in ast.walk(self.node(at)):
            if isinstance(node, ast.Name) and node.id != at[1]:
                resolved = self.resolve(at[0], node.id)
                if resolved is not None:
                    found.add(resolved)
        return found

    def nodes(self) -> Iterator[Node]:
        for module in self.modules.values():
            for name in module.defs:
                yield module.name, name

    def apis(self) -> list[Node]:
        return [n for n in self.nodes() if is_api(self.node(n))]

    def serializers(self) -> list[Node]:
        return [n for n in self.nodes() if is_serializer(self.node(n))]

    def used_by(self, api: Node) -> set[Node]:
        """Every top-level name ``api`` uses, through helpers and serializers but
        not through another API class (that one is the user)."""
        reached: set[Node] = set()
        todo = list(self.names(api))
        while todo:
            at = todo.pop()
            if at in reached or at == api:
                continue
            reached.add(at)
            if not is_api(self.node(at)):
                todo.extend(self.names(at))
        return reached

    def users(self) -> dict[Node, set[Node]]:
        """Each serializer's API classes."""
        users: dict[Node, set[Node]] = {s: set() for s in self.serializers()}
        for api in self.apis():
            for used in self.used_by(api):
                if used in users:
                    users[used].add(api)
        return users

    def nested_used_elsewhere(self) -> Iterator[str]:
        """``OtherApi.InputSerializer`` named outside ``OtherApi``."""
        for at in self.nodes():
            for node in ast.walk(self.node(at)):
                if not (
                    isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                ):
                    continue
                owner = self.resolve(at[0], node.value.id)
                if owner is None or owner == at or not is_api(self.node(owner)):
                    continue
                inner = self.node(owner)
                assert isinstance(inner, ast.ClassDef)
                if any(
                    isinstance(s, ast.ClassDef)
                    and s.name == node.attr
                    and is_serializer(s)
                    for s in inner.body
                ):
                    yield (
                        f"{at[0]}.{at[1]} uses {owner[1]}.{node.attr}, nested in "
                        f"{owner[1]}: move it to the module's top level"
                    )


def _where(nodes: set[Node]) -> str:
    return ", ".join(sorted(f"{m.rsplit('.', 1)[-1]}.{n}" for m, n in nodes)) or "none"


def violations(sources: Mapping[str, str]) -> list[str]:
    """Each serializer that sits where the rule does not put it; ``sources`` maps
    a dotted api module (``procurement.api.rfps``) to its source."""
    graph = Graph(sources)
    found = list(graph.nested_used_elsewhere())
    for (module, name), apis in sorted(graph.users().items()):
        if module in INFRASTRUCTURE:
            continue
        files = {m for m, _ in apis}
        where = f"{module}.{name} (used by {_where(apis)})"
        if module.rsplit(".", 1)[-1] == SHARED:
            if len(files) < 2:
                found.append(f"{where}: used by fewer than 2 api modules")
        elif files - {module}:
            found.append(f"{where}: used by several api modules, so serializers.py")
        elif len(apis) < 2:
            found.append(f"{where}: used by fewer than 2 API classes, so nested")
    return found


def api_sources() -> dict[str, str]:
    sources = {}
    for app in APPS:
        for path in sorted((ROOT / app / "api").glob("*.py")):
            sources[f"{app}.api.{path.stem}"] = path.read_text(encoding="utf-8")
    return sources


def test_every_serializer_sits_where_its_users_put_it() -> None:
    found = violations(api_sources())

    assert not found, "\n".join(found)


SYNTHETIC = {
    "shop.api.serializers": """
from rest_framework import serializers

class PriceSerializer(serializers.Serializer):
    amount = serializers.IntegerField()

class LonelySerializer(serializers.Serializer):
    pass
""",
    "shop.api.items": """
from rest_framework import serializers
from rest_framework.views import APIView
from shop.api.serializers import LonelySerializer, PriceSerializer

class ItemSerializer(serializers.Serializer):
    price = PriceSerializer()

class TagSerializer(serializers.Serializer):
    pass

class NoteSerializer(serializers.Serializer):
    pass

class SharedSerializer(serializers.Serializer):
    pass

def _answer(item):
    return SharedSerializer(item).data

class ItemDetailApi(APIView):
    class OutputSerializer(ItemSerializer):
        pass

    def get(self, request):
        return _answer(None)

class ItemListApi(APIView):
    def get(self, request):
        return [ItemSerializer(i).data for i in ()] + [_answer(NoteSerializer)]

class ItemTagApi(APIView):
    def post(self, request):
        TagSerializer(data=request.data).is_valid()
        LonelySerializer(None)
        return ItemDetailApi.OutputSerializer(None).data
""",
    "shop.api.orders": """
from rest_framework.views import APIView
from shop.api.items import TagSerializer
from shop.api.serializers import PriceSerializer

class OrderApi(APIView):
    def get(self, request):
        return PriceSerializer(None).data, TagSerializer(None).data
""",
}


def test_the_rule_finds_each_misplaced_serializer() -> None:
    found = violations(SYNTHETIC)

    assert found == [
        "shop.api.items.ItemTagApi uses ItemDetailApi.OutputSerializer, nested in "
        "ItemDetailApi: move it to the module's top level",
        "shop.api.items.NoteSerializer (used by items.ItemListApi): "
        "used by fewer than 2 API classes, so nested",
        "shop.api.items.TagSerializer (used by items.ItemTagApi, orders.OrderApi): "
        "used by several api modules, so serializers.py",
        "shop.api.serializers.LonelySerializer (used by items.ItemTagApi): "
        "used by fewer than 2 api modules",
    ]


def test_the_rule_passes_serializers_where_they_belong() -> None:
    users = Graph(SYNTHETIC).users()

    assert users[("shop.api.items", "SharedSerializer")] == {
        ("shop.api.items", "ItemDetailApi"),
        ("shop.api.items", "ItemListApi"),
    }
    assert {m for m, _ in users[("shop.api.serializers", "PriceSerializer")]} == {
        "shop.api.items",
        "shop.api.orders",
    }


def modules_listing_routes(sources: Mapping[str, str]) -> list[str]:
    """The api modules, other than an ``urls`` one, with a top-level
    ``urlpatterns``."""
    return sorted(
        name
        for name, source in sources.items()
        if name.rsplit(".", 1)[-1] != "urls"
        and "urlpatterns" in parse(name, source).defs
    )


def test_only_each_app_api_urlconf_lists_routes() -> None:
    listing = modules_listing_routes(api_sources())

    assert not listing, f"<app>/api/urls.py lists the API's routes, not {listing}"


def test_the_route_check_finds_a_module_listing_routes() -> None:
    sources = {
        "shop.api.urls": "urlpatterns = [*items.urlpatterns]",
        "shop.api.items": "urlpatterns: list[object] = []",
        "shop.api.orders": "from django.urls import path",
    }

    assert modules_listing_routes(sources) == ["shop.api.items"]
