"""Transparency log API (docs/architecture.md), public: anyone, signed in or
not, may read the latest published checkpoint (a signed note, text; reads never
sign one), the log's verifier key (text), inclusion and consistency proofs
(JSON, hashes in base64 as in the RFC 9162 test vectors). An outsider checks a
checkpoint, or a package's proof, against the key without an account.

The log holds hashes only: a checkpoint names the log, its size and root hash;
a proof, the sibling hashes on a path. Leaves (deposit records) are served with
the deposits they belong to, under those deposits' permissions. Bad parameters
answer 400 in the API's error shape; a log whose stored tree contradicts
itself answers 503 ``log_integrity`` (and is logged), never a wrong proof."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.schema import error_response
from artifacts.api.keys import PlainTextRenderer
from artifacts.lib.transparency.keyfile import LogKeyError
from artifacts.selectors.log import (
    LogIntegrityError,
    checkpoint_latest,
    log_consistency_proof,
    log_inclusion_proof,
    log_root,
    log_size,
    log_verifier_key,
)

logger = logging.getLogger(__name__)
MAX_SIZE: Final = 2**63 - 1


class LogUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "log_integrity"
    default_detail = "The transparency log failed a check; the operators must look."


@contextmanager
def _log_guard() -> Iterator[None]:
    """503 ``log_integrity`` (details in the server log only) if the stored log
    contradicts itself or its key file is missing or unusable."""
    try:
        yield
    except (LogIntegrityError, LogKeyError) as error:
        logger.exception("transparency log unavailable")
        raise LogUnavailable from error


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _text(content: str) -> HttpResponse:
    return HttpResponse(content, content_type="text/plain; charset=utf-8")


class NoCheckpointYet(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "no_checkpoint"
    default_detail = (
        "No checkpoint is signed yet; the first is published within a minute."
    )


class PublicLogApi(APIView):
    """Open to anyone (no authentication, so no token or session is needed or
    read): C2SP checkpoints and their proofs are public by design."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]


class LogCheckpointApi(PublicLogApi):
    """The latest published checkpoint (a read: deposits publish one as they
    commit, the beat task every minute). ``Reprogate-Log-Pending`` counts the
    entries appended since it; 503 ``no_checkpoint`` before the first one."""

    renderer_classes = [JSONRenderer, PlainTextRenderer]

    @extend_schema(
        operation_id="log_checkpoint",
        auth=[],
        responses={(200, "text/plain"): OpenApiTypes.STR, 503: error_response(503)},
    )
    def get(self, request: Request) -> HttpResponse:
        checkpoint = checkpoint_latest()
        if checkpoint is None:
            raise NoCheckpointYet
        response = _text(checkpoint.note)
        response["Reprogate-Log-Pending"] = str(max(0, log_size() - checkpoint.size))
        return response


class LogKeyApi(PublicLogApi):
    """The note verifier key checkpoints verify with (``<name>+<id>+<key>``)."""

    renderer_classes = [JSONRenderer, PlainTextRenderer]

    @extend_schema(
        operation_id="log_key",
        auth=[],
        responses={(200, "text/plain"): OpenApiTypes.STR, 503: error_response(503)},
    )
    def get(self, request: Request) -> HttpResponse:
        with _log_guard():
            key = log_verifier_key()
        return _text(key + "\n")


class LogInclusionProofApi(PublicLogApi):
    """Inclusion proof of entry ``index`` in the tree of ``size`` entries."""

    class InputSerializer(serializers.Serializer):
        index = serializers.IntegerField(min_value=0, max_value=MAX_SIZE)
        size = serializers.IntegerField(min_value=1, max_value=MAX_SIZE)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "LogInclusionProof"

        index = serializers.IntegerField()
        size = serializers.IntegerField()
        root_hash = serializers.CharField(help_text="base64")
        proof = serializers.ListField(child=serializers.CharField(), help_text="base64")

    @extend_schema(
        operation_id="log_inclusion_proof",
        auth=[],
        parameters=[InputSerializer],
        responses={200: OutputSerializer, 503: error_response(503)},
    )
    def get(self, request: Request) -> Response:
        query = self.InputSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        index, size = query.validated_data["index"], query.validated_data["size"]
        with _log_guard():
            proof, root = log_inclusion_proof(index, size), log_root(size)
        return Response(
            self.OutputSerializer(
                {"index": index, "size": size, "root_hash": _b64(root),
                 "proof": [_b64(h) for h in proof]}
            ).data
        )  # fmt: skip


class LogConsistencyProofApi(PublicLogApi):
    """Consistency proof from the tree of ``first`` entries to that of ``second``."""

    class InputSerializer(serializers.Serializer):
        first = serializers.IntegerField(min_value=1, max_value=MAX_SIZE)
        second = serializers.IntegerField(min_value=1, max_value=MAX_SIZE)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "LogConsistencyProof"

        first = serializers.IntegerField()
        second = serializers.IntegerField()
        first_root_hash = serializers.CharField(help_text="base64")
        second_root_hash = serializers.CharField(help_text="base64")
        proof = serializers.ListField(child=serializers.CharField(), help_text="base64")

    @extend_schema(
        operation_id="log_consistency_proof",
        auth=[],
        parameters=[InputSerializer],
        responses={200: OutputSerializer, 503: error_response(503)},
    )
    def get(self, request: Request) -> Response:
        query = self.InputSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        first, second = query.validated_data["first"], query.validated_data["second"]
        with _log_guard():
            found = _consistency(first, second)
        return Response(self.OutputSerializer(found).data)


def _consistency(first: int, second: int) -> dict[str, Any]:
    proof = log_consistency_proof(first, second)
    return {
        "first": first,
        "second": second,
        "first_root_hash": _b64(log_root(first)),
        "second_root_hash": _b64(log_root(second)),
        "proof": [_b64(h) for h in proof],
    }
