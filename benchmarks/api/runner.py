"""The runner API under ``/api/v1/runner/``: what a lab host's agent
(``python -m reprogate_agent``) calls, with its host token
(``Authorization: Bearer rgh_…``, ``runner_auth``). The server owns every row
and every state change (``benchmarks.services.remote``); the agent runs the
harness. A run outside the token's pool answers 404; an attempt the host does
not hold (re-queued, cancelled, finished) answers 409. See docs/runner-api.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.errors import error_body
from accounts.api.schema import error_response
from benchmarks.api.runner_auth import HostTokenAuthentication, IsLabHost
from benchmarks.models import HostToken, Run
from benchmarks.services.artefacts import ArtefactTooLarge
from benchmarks.services.pools import WorkerIdentity
from benchmarks.services.remote import (
    PREPARATION_FAILURES,
    OutputTooLarge,
    agent_artefact_put,
    agent_bundle,
    agent_bye,
    agent_claim,
    agent_fail,
    agent_finish,
    agent_heartbeat,
    agent_hello,
    agent_host_queue,
    agent_output_put,
    agent_report,
    agent_run,
    agent_running,
    agent_settings,
    claimed_run,
)

ATTEMPT = OpenApiParameter(
    "attempt", int, OpenApiParameter.QUERY, required=True, description="The attempt."
)


class TextField(serializers.CharField):
    """Text as a harness printed it: NUL characters are kept (the services
    replace them), not refused like a name's."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        nul = ProhibitNullCharactersValidator
        self.validators = [v for v in self.validators if not isinstance(v, nul)]


def _dict(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise serializers.ValidationError("Send a JSON object.")
    return value


class RunnerApiView(APIView):
    """A runner API view: host token only, no session (so no CSRF); every error
    in the API's shape plus ``detail`` (the message)."""

    authentication_classes = [HostTokenAuthentication]
    permission_classes = [IsLabHost]

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        data = response.data
        if isinstance(data, dict) and "message" in data:
            data.setdefault("detail", data["message"])
        return response

    def token(self) -> HostToken:
        token = self.request.auth
        if not isinstance(token, HostToken):  # IsLabHost let no one else in
            raise PermissionDenied
        return token

    def validated(self, serializer: type[serializers.Serializer]) -> dict[str, Any]:
        """The request's body as ``serializer`` checks it (a 400 otherwise)."""
        data = serializer(data=self.request.data)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)

    def run(self, run_id: int) -> Run:
        run = agent_run(token=self.token(), run_id=run_id)
        if run is None:
            raise Http404
        return run


def _conflict(message: str, code: str, **flags: Any) -> Response:
    body = {**flags, **error_body(code, message), "detail": message}
    return Response(body, status=status.HTTP_409_CONFLICT)


# -- the host ------------------------------------------------------------------


class WorkerSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RunnerWorker"

    worker_name = serializers.CharField(max_length=255)


class OkSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RunnerOk"

    ok = serializers.BooleanField()


class HelloApi(RunnerApiView):
    """Register the agent's host on its token's pool; learn the queues to consume
    (the pool's, and the host's own)."""

    class InputSerializer(WorkerSerializer):
        class Meta:
            ref_name = "RunnerHelloInput"

        hostname = serializers.CharField(max_length=255, required=False, default="")
        pid = serializers.IntegerField(
            min_value=0, max_value=2**31 - 1, required=False, allow_null=True
        )
        environment = serializers.JSONField(required=False, default=dict)
        sandbox = serializers.JSONField(required=False, default=dict)
        signing_key = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=4096
        )

        def validate_environment(self, value: Any) -> dict[str, Any]:
            return _dict(value)

        def validate_sandbox(self, value: Any) -> dict[str, Any]:
            return _dict(value)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RunnerHello"

        host = serializers.UUIDField()
        pool = serializers.CharField()
        queue = serializers.CharField()
        host_queue = serializers.CharField(
            allow_blank=True,
            help_text="This host's own queue, consumed beside the pool's: the "
            "runs of a campaign bound to named hosts (a gate's canary hosts). "
            "Empty when the worker name cannot name a queue.",
        )
        heartbeat_seconds = serializers.FloatField()
        progress_write_seconds = serializers.FloatField()
        log_tail_chars = serializers.IntegerField()
        output_limit_bytes = serializers.IntegerField()
        max_output_files = serializers.IntegerField()
        signing_key = serializers.ChoiceField(choices=["pinned", "pending", "none"])
        signing_key_fingerprint = serializers.CharField()

    @extend_schema(
        operation_id="runner_hello",
        request=InputSerializer,
        responses={200: OutputSerializer},
    )
    def post(self, request: Request) -> Response:
        fields = self.validated(self.InputSerializer)
        token = self.token()
        host = agent_hello(
            token=token,
            worker=WorkerIdentity(
                worker_name=fields["worker_name"],
                hostname=fields["hostname"],
                pid=fields.get("pid"),
                environment=fields["environment"],
                sandbox=fields["sandbox"],
            ),
            signing_key=fields["signing_key"],
        )
        limits = agent_settings()
        key = "pending" if host.pending_signing_key else "pinned"
        return Response(
            {
                "host": str(host.public_id),
                "pool": token.pool.name,
                "queue": token.pool.queue,
                "host_queue": agent_host_queue(host),
                "heartbeat_seconds": limits.heartbeat_seconds,
                "progress_write_seconds": limits.progress_write_seconds,
                "log_tail_chars": limits.log_tail_chars,
                "output_limit_bytes": limits.output_limit_bytes,
                "max_output_files": limits.max_output_files,
                "signing_key": key if host.signing_key else "none",
                "signing_key_fingerprint": host.signing_key_fingerprint,
            }
        )


class HeartbeatApi(RunnerApiView):
    """The agent is alive (every ``heartbeat_seconds``)."""

    @extend_schema(
        operation_id="runner_heartbeat",
        request=WorkerSerializer,
        responses={200: OkSerializer},
    )
    def post(self, request: Request) -> Response:
        worker_name = self.validated(WorkerSerializer)["worker_name"]
        agent_heartbeat(token=self.token(), worker_name=worker_name)
        return Response({"ok": True})


class ByeApi(RunnerApiView):
    """The agent shuts down cleanly: its host is shown offline."""

    @extend_schema(
        operation_id="runner_bye",
        request=WorkerSerializer,
        responses={200: OkSerializer},
    )
    def post(self, request: Request) -> Response:
        worker_name = self.validated(WorkerSerializer)["worker_name"]
        agent_bye(token=self.token(), worker_name=worker_name)
        return Response({"ok": True})


# -- the run -------------------------------------------------------------------


class AttemptSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RunnerAttempt"

    attempt = serializers.IntegerField(min_value=1, max_value=32767)


class ClaimApi(RunnerApiView):
    """Take the queued run for this host (409: not queued with this attempt, or
    its campaign is bound to hosts that do not include this one; skip the
    message)."""

    class InputSerializer(AttemptSerializer):
        class Meta:
            ref_name = "RunnerClaimInput"

        worker_name = serializers.CharField(max_length=255)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RunnerClaim"

        class ClaimedRunSerializer(serializers.Serializer):
            class Meta:
                ref_name = "RunnerClaimedRun"

            class ClaimedBundleSerializer(serializers.Serializer):
                class Meta:
                    ref_name = "RunnerClaimedBundle"

                sha256 = serializers.CharField()
                size = serializers.IntegerField()
                url = serializers.CharField()

            class ClaimedFileSerializer(serializers.Serializer):
                class Meta:
                    ref_name = "RunnerClaimedFile"

                path = serializers.CharField()
                sha256 = serializers.CharField()
                size = serializers.IntegerField()
                kind = serializers.CharField()

            id = serializers.IntegerField()
            public_id = serializers.UUIDField()
            campaign = serializers.UUIDField()
            repetition = serializers.IntegerField()
            attempt = serializers.IntegerField()
            scenario = serializers.JSONField()
            entrypoint = serializers.CharField()
            outputs = serializers.ListField(
                child=serializers.CharField(),
                help_text="The declared outputs' paths (compared by seed_ignored).",
            )
            seed = serializers.IntegerField(
                allow_null=True,
                help_text="REPROGATE_SEED for the harness: the lab's fresh seed.",
            )
            files = ClaimedFileSerializer(many=True)
            wall_limit_s = serializers.IntegerField()
            cpu_seconds = serializers.IntegerField()
            file_bytes = serializers.IntegerField()
            cold_cache = serializers.BooleanField()
            policy = serializers.JSONField(
                help_text="The pool's device and endpoint policy at the claim."
            )
            bundle = ClaimedBundleSerializer()

        claimed = serializers.BooleanField()
        run = ClaimedRunSerializer()

    @extend_schema(
        operation_id="runner_claim",
        request=InputSerializer,
        responses={200: OutputSerializer},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = self.run(run_id)
        fields = self.validated(self.InputSerializer)
        claimed = agent_claim(
            token=self.token(),
            run=run,
            attempt=fields["attempt"],
            worker_name=fields["worker_name"],
        )
        if claimed is None:
            message = f"The run is not queued with attempt {fields['attempt']}."
            return _conflict(message, "not_queued", claimed=False)
        return Response({"claimed": True, "run": claimed_run(claimed)})


class _BinaryRenderer(BaseRenderer):
    media_type = "application/octet-stream"
    format = "bin"
    charset = None
    render_style = "binary"

    def render(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        return data


class BundleApi(RunnerApiView):
    """The bundle archive (streamed), while this host prepares the attempt.
    Check ``X-Bundle-SHA256`` and the size before extracting it."""

    renderer_classes = [JSONRenderer, _BinaryRenderer]

    @extend_schema(
        operation_id="runner_bundle",
        parameters=[ATTEMPT],
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY),
            409: error_response(409),
        },
    )
    def get(self, request: Request, run_id: int) -> StreamingHttpResponse:
        run = self.run(run_id)
        data = AttemptSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        stream = agent_bundle(
            token=self.token(), run=run, attempt=data.validated_data["attempt"]
        )
        response = StreamingHttpResponse(
            stream.chunks, content_type="application/octet-stream"
        )
        response["Content-Length"] = str(stream.size)
        response["X-Bundle-SHA256"] = stream.sha256
        response["Cache-Control"] = "no-store"
        return response


class ReportApi(RunnerApiView):
    """Progress and log tail (409 ``continue: false``: stop the harness)."""

    class InputSerializer(AttemptSerializer):
        class Meta:
            ref_name = "RunnerReportInput"

        progress = serializers.FloatField(required=False, allow_null=True)
        log_tail = TextField(required=False, allow_null=True, allow_blank=True)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RunnerReport"

        # "continue" is a Python keyword: the field is named in ``get_fields``.
        def get_fields(self) -> dict[str, serializers.Field]:
            return {"continue": serializers.BooleanField()}

    @extend_schema(
        operation_id="runner_report",
        request=InputSerializer,
        responses={200: OutputSerializer},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = self.run(run_id)
        fields = self.validated(self.InputSerializer)
        if agent_report(
            token=self.token(),
            run=run,
            attempt=fields["attempt"],
            progress=fields.get("progress"),
            log_tail=fields.get("log_tail"),
        ):
            return Response({"continue": True})
        message = "Stop: the run was cancelled, re-queued or finished."
        return _conflict(message, "stop", **{"continue": False})


class StateSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RunnerState"

    state = serializers.CharField()


class RunningApi(RunnerApiView):
    """The harness starts: the host's environment (the server computes drift)."""

    class InputSerializer(AttemptSerializer):
        class Meta:
            ref_name = "RunnerRunningInput"

        environment = serializers.JSONField()
        declared_environment = serializers.JSONField(required=False, default=dict)
        cache_dropped = serializers.BooleanField(required=False, allow_null=True)

        def validate_environment(self, value: Any) -> dict[str, Any]:
            return _dict(value)

        def validate_declared_environment(self, value: Any) -> dict[str, Any]:
            return _dict(value)

    class OutputSerializer(StateSerializer):
        class Meta:
            ref_name = "RunnerRunning"

        drift = serializers.ListField(child=serializers.JSONField())

    @extend_schema(
        operation_id="runner_running",
        request=InputSerializer,
        responses={200: OutputSerializer},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = self.run(run_id)
        fields = self.validated(self.InputSerializer)
        run = agent_running(
            token=self.token(),
            run=run,
            attempt=fields["attempt"],
            environment=fields["environment"],
            declared_environment=fields["declared_environment"],
            cache_dropped=fields.get("cache_dropped"),
        )
        return Response({"state": run.state, "drift": run.drift})


class _OctetStreamParser(BaseParser):
    """Named for the schema; the view reads the body as a stream itself."""

    media_type = "application/octet-stream"

    def parse(self, stream: Any, *args: Any, **kwargs: Any) -> Any:
        return {}


def _raw_body(request: Request) -> tuple[Callable[[int], bytes], int | None]:
    """An upload's body as a reader, and its declared length (None if absent)."""
    try:
        length: int | None = int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        length = None
    body = request.stream
    return (body.read if body is not None else (lambda size: b"")), length


def _too_large(code: str, message: str) -> Response:
    body = {**error_body(code, message), "detail": message}
    return Response(body, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)


class OutputApi(RunnerApiView):
    """One output file of the attempt, the raw body (400 unsafe path; 413 over
    the attempt's limits; 409 stale or uploaded already)."""

    parser_classes = [_OctetStreamParser]

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RunnerOutput"

        path = serializers.CharField()
        sha256 = serializers.CharField()
        size = serializers.IntegerField()

    @extend_schema(
        operation_id="runner_output_put",
        parameters=[ATTEMPT],
        request={"application/octet-stream": OpenApiTypes.BINARY},
        responses={201: OutputSerializer, 413: error_response(413)},
    )
    def put(self, request: Request, run_id: int, path: str) -> Response:
        run = self.run(run_id)
        data = AttemptSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        read, length = _raw_body(request)
        try:
            saved = agent_output_put(
                token=self.token(),
                run=run,
                attempt=data.validated_data["attempt"],
                path=path,
                read=read,
                length=length,
            )
        except OutputTooLarge as error:
            return _too_large(error.code, error.message)
        return Response(
            {"path": saved.path, "sha256": saved.sha256, "size": saved.size},
            status=status.HTTP_201_CREATED,
        )


class ArtefactApi(RunnerApiView):
    """One runner artefact of the attempt (``telemetry.bin`` …), the raw body:
    the runner's own file, never the harness's (400 unknown name or a blob that
    does not decode; 413 too large; 409 stale, or other bytes sent already)."""

    parser_classes = [_OctetStreamParser]

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RunnerArtefact"

        name = serializers.CharField()
        sha256 = serializers.CharField()
        size = serializers.IntegerField()

    @extend_schema(
        operation_id="runner_artefact_put",
        parameters=[ATTEMPT],
        request={"application/octet-stream": OpenApiTypes.BINARY},
        responses={201: OutputSerializer, 413: error_response(413)},
    )
    def put(self, request: Request, run_id: int, name: str) -> Response:
        run = self.run(run_id)
        data = AttemptSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        read, length = _raw_body(request)
        try:
            saved = agent_artefact_put(
                token=self.token(),
                run=run,
                attempt=data.validated_data["attempt"],
                name=name,
                read=read,
                length=length,
            )
        except ArtefactTooLarge as error:
            return _too_large(error.code, error.message)
        return Response(
            {"name": saved.path, "sha256": saved.sha256, "size": saved.size},
            status=status.HTTP_201_CREATED,
        )


class FinishApi(RunnerApiView):
    """The harness ended: the server stores and parses the uploaded outputs and
    ends the run as a local worker does."""

    class InputSerializer(AttemptSerializer):
        class Meta:
            ref_name = "RunnerFinishInput"

        class ResultSerializer(serializers.Serializer):
            class Meta:
                ref_name = "RunnerResult"

            exit_code = serializers.IntegerField(
                allow_null=True, min_value=-(2**31), max_value=2**31 - 1
            )
            stop_reason = serializers.RegexField(r"^[a-z_]{1,32}$")
            isolation = serializers.JSONField(required=False, default=dict)
            duration_s = serializers.FloatField(
                required=False, allow_null=True, min_value=0
            )
            output_truncated = serializers.BooleanField(required=False, default=False)
            log_tail = TextField(required=False, allow_blank=True, default="")
            progress = serializers.FloatField(required=False, allow_null=True)
            message = TextField(
                required=False, allow_blank=True, default="", max_length=4000
            )

            def validate_isolation(self, value: Any) -> dict[str, Any]:
                return _dict(value)

        result = ResultSerializer()
        warnings = serializers.ListField(
            child=TextField(max_length=2000, allow_blank=True),
            required=False,
            default=list,
            max_length=1000,
        )
        statement = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=16 * 1024 * 1024
        )
        checks = serializers.ListField(
            child=serializers.JSONField(),
            required=False,
            default=list,
            max_length=16,
            help_text="The run's anti-gaming checks, as its statement names them.",
        )

    @extend_schema(
        operation_id="runner_finish",
        request=InputSerializer,
        responses={200: StateSerializer},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = self.run(run_id)
        fields = self.validated(self.InputSerializer)
        state = agent_finish(
            token=self.token(),
            run=run,
            attempt=fields["attempt"],
            result=dict(fields["result"]),
            warnings=fields["warnings"],
            statement=fields["statement"],
            checks=fields["checks"],
        )
        if state == "stale":
            return _conflict("The run moved on meanwhile.", "stale_attempt")
        return Response({"state": state})


class FailApi(RunnerApiView):
    """Preparing failed on the host (or it saw a cancellation while preparing)."""

    class InputSerializer(AttemptSerializer):
        class Meta:
            ref_name = "RunnerFailInput"

        stop_reason = serializers.ChoiceField(
            choices=sorted({*PREPARATION_FAILURES, "cancelled"})
        )
        message = TextField(
            required=False, allow_blank=True, default="", max_length=4000
        )
        log_tail = TextField(required=False, allow_blank=True, default="")

    @extend_schema(
        operation_id="runner_fail",
        request=InputSerializer,
        responses={200: StateSerializer},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = self.run(run_id)
        fields = self.validated(self.InputSerializer)
        state = agent_fail(
            token=self.token(),
            run=run,
            attempt=fields["attempt"],
            stop_reason=fields["stop_reason"],
            message=fields["message"],
            log_tail=fields["log_tail"],
        )
        if state == "stale":
            return _conflict("The run moved on meanwhile.", "stale_attempt")
        return Response({"state": state})
