"""Every gates API operation is in the OpenAPI schema with its errors in the
API's error shape."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db

ERROR = {"$ref": "#/components/schemas/Error"}
OPERATIONS = {
    ("/api/v1/rfps/{rfp_id}/gate-board/", "get"): {401, 404},
    ("/api/v1/evaluations/{evaluation_id}/", "get"): {401, 404},
    ("/api/v1/evaluations/{evaluation_id}/more-runs/", "post"): {400, 403, 409},
    ("/api/v1/gate-plans/{plan_id}/gates/{gate}/evaluate/", "post"): {400, 409},
    ("/api/v1/rfps/{rfp_id}/gate-plans/", "get"): {401, 404},
    ("/api/v1/rfps/{rfp_id}/gate-plans/", "post"): {400, 403, 404, 409},
    ("/api/v1/gate-plans/{plan_id}/", "patch"): {400, 403, 409},
    ("/api/v1/gate-plans/{plan_id}/freeze/", "post"): {400, 409},
    ("/api/v1/gate-plans/{plan_id}/new-version/", "post"): {409},
    ("/api/v1/gate-plans/{plan_id}/export/", "get"): {404},
    ("/api/v1/gate-plans/{plan_id}/gates/{gate}/decisions/", "post"): {400, 409},
    ("/api/v1/decisions/{decision_id}/second/", "post"): {400, 409},
    ("/api/v1/decisions/{decision_id}/withdraw/", "post"): {403, 409},
    ("/api/v1/retest-obligations/", "get"): {401},
    ("/api/v1/retest-obligations/{obligation_id}/", "get"): {404},
    ("/api/v1/retest-obligations/{obligation_id}/request/", "post"): {400, 409},
}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.mark.parametrize(("route", "method"), sorted(OPERATIONS))
def test_operation_documents_its_errors_in_the_error_shape(
    schema: dict[str, Any], route: str, method: str
) -> None:
    responses = schema["paths"][route][method]["responses"]

    for code in OPERATIONS[route, method]:
        content = responses[str(code)]["content"]["application/json"]
        assert content["schema"] == ERROR, (route, method, code)


def test_error_shape_has_code_message_and_problems(schema: dict[str, Any]) -> None:
    shape = schema["components"]["schemas"]["Error"]

    assert set(shape["required"]) == {"code", "message", "problems"}
    problem = schema["components"]["schemas"]["Problem"]
    assert set(problem["properties"]) == {"code", "message", "path"}


def test_evaluation_documents_are_described_beside_their_extras(
    schema: dict[str, Any],
) -> None:
    body = schema["components"]["schemas"]["GateEvaluationDocuments"]

    assert {"evaluation", "plan", "results", "id", "evaluation_sha256"} <= set(
        body["properties"]
    )
