"""What a benchmark report and an acceptance certificate say: their template
context, read from the database (reads only, a fixed number of queries whatever
the number of criteria or runs).

Every number of a criterion is printed exactly as the evaluation document has
it (``repr`` of the JSON float, ``str`` of the int, never rounded), so the
figures in the PDF can be found verbatim in ``evaluation.json``; the claim and
the band come from the plan document, the units from the results document. The
charts are the criterion page's Plotly figures (``gates.lib.charts``) drawn as SVG
(``gates.lib.report_charts``). See docs/reports.md."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from artifacts.models import Checkpoint, Deposit
from artifacts.selectors.log import checkpoint_latest, log_origin, log_root, log_size
from benchmarks.lib.lab.checks import CHECK_LABELS
from benchmarks.lib.lab.scenario_document import ScenarioDocument
from benchmarks.lib.lab.scenario_summary import num, scenario_did
from benchmarks.lib.lab.scenarios.base import STEADY, scenario_kind
from benchmarks.models import Run
from benchmarks.selectors.telemetry import campaign_scenario_documents
from gates.lib.charts import Figure, criterion_repetitions
from gates.lib.engine.validate import checks_named
from gates.lib.report_charts import figures_svg
from gates.models import Decision, Evaluation
from gates.selectors.disputes import dispute_lines
from gates.selectors.evaluations import scenario_repetitions
from gates.selectors.results import run_drift, run_status

Progress = Callable[[int, str], None]
DASH: Final = "—"
# More sections than this and the report opens with a table of contents.
TOC_MIN_SECTIONS: Final = 4


def when(moment: datetime | None) -> str:
    """A time as the report prints it: UTC to the second."""
    if moment is None:
        return DASH
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def person(user: Any) -> str:
    if user is None:
        return "ReproGate (automatic)"
    full = user.get_full_name() if hasattr(user, "get_full_name") else ""
    return f"{full} ({user.get_username()})" if full else str(user.get_username())


@dataclass
class CriterionLine:
    """One criterion as the report's table and chart show it."""

    id: str
    metric: str
    stat: str
    scenario: str
    direction: str
    blocking: bool
    unit: str
    claim: str
    band: str
    limit: str
    estimate: str
    ci_low: str
    ci_high: str
    ci_level: str
    cv_pct: str
    runs: int
    more_runs_needed: str
    verdict: str
    reason: str
    figure: Figure | None = None
    svg: str | None = None  # the figure drawn (gates.lib.report_charts)

    @property
    def chart_src(self) -> str:
        """The drawn figure as a ``data:`` URL for an ``<img>``: WeasyPrint draws
        it as vectors, and no markup of the SVG enters the report's HTML."""
        if not self.svg:
            return ""
        encoded = base64.b64encode(self.svg.encode("utf-8")).decode("ascii")
        return f"data:image/svg+xml;base64,{encoded}"


@dataclass(frozen=True)
class StopLossLine:
    id: str
    condition: str
    triggered: bool
    runs: list[str]
    reason: str


@dataclass(frozen=True)
class DepositLine:
    what: str
    kind: str
    public_id: str
    log_index: int
    leaf_hash: str
    deposited_at: str


@dataclass(frozen=True)
class OutputLine:
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class CheckLine:
    """An anti-gaming check the host made on a run (``benchmarks.lib.lab.checks``)."""

    id: str
    label: str
    applicable: bool
    flagged: bool
    detail: str


@dataclass(frozen=True)
class BaselineLine:
    """A criterion held to the buyer's baseline: the baseline's median and runs
    as the evaluation document has them."""

    criterion: str
    scenario: str
    median: str
    unit: str
    runs: list[str]


@dataclass
class RunLine:
    id: str
    scenario: str
    repetition: int
    status: str
    counted: bool
    drift: str
    host: str
    os: str
    kernel: str
    cpu: str
    gpus: str
    drift_entries: list[dict[str, str]] = field(default_factory=list)
    outputs: list[OutputLine] = field(default_factory=list)
    output_log_index: int | None = None
    kind: str = STEADY
    seed: str = DASH
    checks: list[CheckLine] = field(default_factory=list)
    did: list[str] = field(default_factory=list)  # what the runner did
    scenario_metrics: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> list[CheckLine]:
        return [c for c in self.checks if c.flagged]


@dataclass(frozen=True)
class DecisionLine:
    public_id: str
    kind: str
    status: str
    rationale: str
    decided_by: str
    decided_at: str
    second_by: str
    second_at: str
    second_note: str
    withdrawn_by: str
    withdrawn_at: str
    log_index: str
    on_this_evaluation: bool


@dataclass(frozen=True)
class LogHead:
    """The log state the report cites: a signed checkpoint covering every
    deposit cited, or (none signed yet) the tree as it stands."""

    origin: str
    size: int
    root_hash: str
    signed: bool
    covers: bool
    created_at: str
    note: str


def _progress(progress: Progress | None, pct: int, step: str) -> None:
    if progress is not None:
        progress(pct, step)


def _gate_spec(plan: dict[str, Any], gate: str) -> dict[str, Any]:
    return next((g for g in plan.get("gates", []) if g.get("name") == gate), {})


def _units(results: dict[str, Any]) -> dict[tuple[str, str], str]:
    units: dict[tuple[str, str], str] = {}
    for run in results.get("runs", []):
        for m in run.get("metrics", []):
            units.setdefault((m["name"], m["stat"]), m.get("unit") or "")
    return units


def _band(spec: dict[str, Any], unit: str) -> str:
    band = spec.get("band")
    if isinstance(band, dict) and "pct" in band:
        return f"{num(band['pct'])} %"
    if isinstance(band, dict) and "abs" in band:
        return f"{num(band['abs'])} {unit}".rstrip()
    if "threshold" in spec:
        return "threshold"
    if isinstance(spec.get("baseline"), dict):
        return f"{num(spec['baseline']['pct'])} % of the baseline"
    return DASH


def _claim(spec: dict[str, Any]) -> str:
    if "claim" in spec:
        return num(spec["claim"])
    if "threshold" in spec:
        return f"threshold {num(spec['threshold'])}"
    if isinstance(spec.get("baseline"), dict):
        return f"baseline in {spec['baseline']['scenario']}"
    return DASH


def criterion_lines(
    plan: dict[str, Any], results: dict[str, Any], doc: dict[str, Any], gate: str
) -> list[CriterionLine]:
    """Every criterion of the evaluation document, in plan order, with its
    figure (the criterion page's: every repetition against claim and limit)."""
    specs = {c["id"]: c for c in _gate_spec(plan, gate).get("criteria", [])}
    units = _units(results)
    lines = []
    for done in doc.get("criteria", []):
        spec = specs.get(done["id"], {})
        metric, stat = spec.get("metric", ""), spec.get("stat", "")
        unit = units.get((metric, stat), "")
        ci = done.get("ci") or [None, None]
        line = CriterionLine(
            id=done["id"],
            metric=metric,
            stat=stat,
            scenario=spec.get("scenario", ""),
            direction=spec.get("direction", ""),
            blocking=bool(spec.get("blocking", True)),
            unit=unit,
            claim=_claim(spec),
            band=_band(spec, unit),
            limit=num(done.get("limit")),
            estimate=num(done.get("estimate")),
            ci_low=num(ci[0]),
            ci_high=num(ci[1]),
            ci_level=num(done.get("ci_level")),
            cv_pct=num(done.get("cv_pct")),
            runs=len(done.get("runs", [])),
            more_runs_needed=num(done.get("more_runs_needed")),
            verdict=done["verdict"],
            reason=done.get("reason", ""),
        )
        line.figure = criterion_repetitions(
            repetitions=scenario_repetitions(
                results,
                scenario=spec.get("scenario", ""),
                metric=spec.get("metric", ""),
                stat=spec.get("stat", ""),
                counted=set(done.get("runs", [])),
            ),
            claim=spec.get("claim"),
            limit=done.get("limit"),
            unit=unit,
            verdict=done["verdict"],
            ci=(ci[0], ci[1]),
        )
        lines.append(line)
    return lines


def _condition(spec: dict[str, Any]) -> str:
    """A stop-loss condition in words."""
    if spec.get("run_failed"):
        return "any run failed"
    if "drift_at_least" in spec:
        return f"environment drift at least {spec['drift_at_least']}"
    if "check_flagged" in spec:
        return "anti-gaming check flagged: " + ", ".join(checks_named(spec))
    where = spec.get("scenario", "*")
    scope = "any scenario" if where == "*" else where
    metric = f"{spec.get('metric', '')} {spec.get('stat', '')} in {scope}"
    if "above" in spec:
        return f"{metric} above {num(spec['above'])}"
    if "below" in spec:
        return f"{metric} below {num(spec['below'])}"
    return json.dumps(spec, sort_keys=True)


def stop_loss_lines(
    plan: dict[str, Any], doc: dict[str, Any], gate: str
) -> list[StopLossLine]:
    specs = {s["id"]: s for s in _gate_spec(plan, gate).get("stop_loss", [])}
    return [
        StopLossLine(
            s["id"],
            _condition(specs.get(s["id"], {})),
            bool(s["triggered"]),
            list(s.get("runs", [])),
            s.get("reason", ""),
        )
        for s in doc.get("stop_loss", [])
    ]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _environment(env: Any) -> dict[str, str]:
    env = env if isinstance(env, dict) else {}
    os_info = env.get("os") if isinstance(env.get("os"), dict) else {}
    kernel = env.get("kernel") if isinstance(env.get("kernel"), dict) else {}
    cpu = env.get("cpu") if isinstance(env.get("cpu"), dict) else {}
    gpus = env.get("gpus") if isinstance(env.get("gpus"), list) else []
    models = [g.get("model") or g.get("name") for g in gpus if isinstance(g, dict)]
    return {
        "hostname": _text(env.get("hostname")),
        "os": _text(os_info.get("pretty_name") or os_info.get("name")),
        "kernel": _text(kernel.get("release")),
        "cpu": _text(cpu.get("model")),
        "gpus": ", ".join(_text(m) for m in models if m),
    }


def _drift_entries(drift: Any) -> list[dict[str, str]]:
    entries = drift if isinstance(drift, list) else []
    return [
        {
            "field": _text(e.get("field")),
            "severity": _text(e.get("severity")),
            "declared": _text(e.get("declared")),
            "captured": _text(e.get("captured")),
        }
        for e in entries
        if isinstance(e, dict)
    ]


def check_lines(checks: Any) -> list[CheckLine]:
    """A run's recorded checks (anything not shaped as one is left out)."""
    listed = checks if isinstance(checks, list) else []
    return [
        CheckLine(
            id=_text(c.get("id")),
            label=CHECK_LABELS.get(_text(c.get("id")), _text(c.get("id"))),
            applicable=bool(c.get("applicable", True)),
            flagged=bool(c.get("flagged")),
            detail=_text(c.get("detail")),
        )
        for c in listed
        if isinstance(c, dict)
    ]


def _scenario_facts(line: RunLine, document: ScenarioDocument | None) -> None:
    if document is None:
        return
    line.kind = document.kind
    line.did = scenario_did(document.record)
    line.scenario_metrics = [
        f"{m.name} {m.stat} = {num(m.value)} {m.unit}".rstrip()
        for m in document.metrics
    ]


def run_lines(evaluation: Evaluation, doc: dict[str, Any]) -> list[RunLine]:
    """Every run of the evaluation's campaign (three queries): its environment,
    drift, outputs' digests and output deposit, its scenario kind with what the
    runner did (its ``scenario.json``), its seed and anti-gaming checks;
    ``counted`` when a criterion judged it."""
    counted = {r for c in doc.get("criteria", []) for r in c.get("runs", [])}
    runs = (
        Run.objects.filter(campaign_id=evaluation.campaign_id)
        .select_related("host", "output_deposit")
        .prefetch_related("outputs__blob")
        .order_by("scenario_name", "repetition", "public_id")
    )
    documents = campaign_scenario_documents(evaluation.campaign_id)
    lines = []
    for run in runs:
        # the run's own capture, else what its host captured when it registered
        captured = run.environment or (run.host.environment if run.host else {})
        env = _environment(captured)
        line = RunLine(
            id=str(run.public_id),
            scenario=run.scenario_name,
            repetition=run.repetition,
            status=run_status(run.state),
            counted=str(run.public_id) in counted,
            drift=run_drift(run.drift),
            host=env["hostname"] or (run.host.hostname if run.host else ""),
            os=env["os"],
            kernel=env["kernel"],
            cpu=env["cpu"],
            gpus=env["gpus"],
            drift_entries=_drift_entries(run.drift),
            outputs=[
                OutputLine(o.path, o.blob.sha256, o.blob.size)
                for o in run.outputs.all()
                if o.attempt == run.attempt
            ],
            output_log_index=(
                run.output_deposit.log_index if run.output_deposit else None
            ),
            kind=scenario_kind(run.scenario),
            seed=num(run.seed),
            checks=check_lines(run.checks),
        )
        _scenario_facts(line, documents.get(run.pk))
        lines.append(line)
    return lines


def baseline_lines(
    plan: dict[str, Any], results: dict[str, Any], doc: dict[str, Any], gate: str
) -> list[BaselineLine]:
    """The criteria of the evaluation held to the buyer's baseline, with the
    baseline's median and runs as the evaluation document has them."""
    specs = {c["id"]: c for c in _gate_spec(plan, gate).get("criteria", [])}
    units = _units(results)
    lines = []
    for done in doc.get("criteria", []):
        base = done.get("baseline")
        if not isinstance(base, dict):
            continue
        spec = specs.get(done["id"], {})
        lines.append(
            BaselineLine(
                criterion=done["id"],
                scenario=_text(base.get("scenario")),
                median=num(base.get("median")),
                unit=units.get((spec.get("metric", ""), spec.get("stat", "")), ""),
                runs=[_text(r) for r in base.get("runs", [])],
            )
        )
    return lines


def _deposit_line(what: str, deposit: Deposit) -> DepositLine:
    return DepositLine(
        what=what,
        kind=deposit.get_kind_display(),
        public_id=str(deposit.public_id),
        log_index=deposit.log_index,
        leaf_hash=deposit.leaf_hash,
        deposited_at=when(deposit.deposited_at),
    )


def log_head(indexes: Sequence[int]) -> LogHead:
    """The latest signed checkpoint, and whether it covers every index cited;
    when none is signed yet, the tree as it stands now (unsigned)."""
    needed = max(indexes, default=-1) + 1
    checkpoint: Checkpoint | None = checkpoint_latest()
    if checkpoint is not None and checkpoint.size >= needed:
        return LogHead(
            origin=checkpoint.origin,
            size=checkpoint.size,
            root_hash=bytes(checkpoint.root_hash).hex(),
            signed=True,
            covers=True,
            created_at=when(checkpoint.created_at),
            note=checkpoint.note,
        )
    size = log_size()
    return LogHead(
        origin=log_origin(),
        size=size,
        root_hash=log_root(size).hex(),
        signed=False,
        covers=size >= needed,
        created_at="",
        note="",
    )


def decision_line(decision: Decision, evaluation_id: int) -> DecisionLine:
    return DecisionLine(
        public_id=str(decision.public_id),
        kind=decision.get_kind_display(),
        status=decision.get_status_display(),
        rationale=decision.rationale,
        decided_by=person(decision.decided_by),
        decided_at=when(decision.decided_at),
        second_by=person(decision.second_by) if decision.second_by_id else DASH,
        second_at=when(decision.second_at),
        second_note=decision.second_note,
        withdrawn_by=(
            person(decision.withdrawn_by) if decision.withdrawn_by_id else DASH
        ),
        withdrawn_at=when(decision.withdrawn_at),
        log_index=num(decision.log_index),
        on_this_evaluation=decision.evaluation_id == evaluation_id,
    )


def _evaluation(evaluation: Evaluation) -> Evaluation:
    """The evaluation with everything the report names, in one query."""
    return Evaluation.objects.select_related(
        "plan",
        "rfp__buyer_organisation",
        "vendor_organisation",
        "campaign__bundle__archive_blob",
        "campaign__bundle__signing_key",
        "campaign__pool",
        "deposit",
        "evaluated_by",
    ).get(pk=evaluation.pk)


def _bundle_facts(evaluation: Evaluation) -> dict[str, Any]:
    bundle = evaluation.campaign.bundle
    key = bundle.signing_key
    return {
        "public_id": str(bundle.public_id),
        "filename": bundle.filename,
        "archive_sha256": bundle.archive_blob.sha256
        if bundle.archive_blob
        else bundle.sha256,
        "size": bundle.size,
        "manifest_sha256": bundle.manifest_sha256,
        "signature_kind": bundle.get_signature_kind_display(),
        "key_fingerprint": key.fingerprint if key else DASH,
        "key_type": key.get_key_type_display() if key else "",
        "uploaded_at": when(bundle.created_at),
    }


def _common(evaluation: Evaluation, doc: dict[str, Any]) -> dict[str, Any]:
    rfp = evaluation.rfp
    return {
        "rfp": {
            "reference": rfp.reference,
            "title": rfp.title,
            "buyer": rfp.buyer_organisation.name or rfp.buyer_organisation.slug,
        },
        "vendor": {
            "name": evaluation.vendor_organisation.name
            or evaluation.vendor_organisation.slug,
            "slug": evaluation.vendor_organisation.slug,
        },
        "gate": evaluation.gate,
        "plan_version": evaluation.plan.version,
        "evaluation": {
            "public_id": str(evaluation.public_id),
            "verdict": evaluation.verdict,
            "score_pct": num(doc.get("score_pct")),
            "evaluated_at": when(evaluation.evaluated_at),
            "evaluated_by": person(evaluation.evaluated_by),
            "plan_sha256": evaluation.plan_sha256,
            "results_sha256": evaluation.results_sha256,
            "evaluation_sha256": evaluation.evaluation_sha256,
            "log_index": evaluation.deposit.log_index if evaluation.deposit else None,
            "campaign": str(evaluation.campaign.public_id),
        },
    }


def _scenarios(evaluation: Evaluation, runs: list[RunLine]) -> list[dict[str, Any]]:
    declared = evaluation.campaign.scenarios or []
    names = [s.get("name", "") for s in declared if isinstance(s, dict)]
    for run in runs:
        if run.scenario not in names:
            names.append(run.scenario)
    by_name = {s.get("name"): s for s in declared if isinstance(s, dict)}
    return [
        {
            "name": name,
            "parameters": ", ".join(
                f"{k} {v}"
                for k, v in sorted(by_name.get(name, {}).items())
                if k != "name"
            ),
            "runs": sum(1 for r in runs if r.scenario == name),
            "succeeded": sum(
                1 for r in runs if r.scenario == name and r.status == "succeeded"
            ),
        }
        for name in names
    ]


def attach_charts(criteria: Sequence[CriterionLine]) -> None:
    """Draw every criterion's figure as SVG (one Chromium for the batch)."""
    drawn = [c for c in criteria if c.figure is not None]
    for line, svg in zip(
        drawn, figures_svg([c.figure for c in drawn if c.figure]), strict=True
    ):
        line.svg = svg


def evaluation_report_context(
    evaluation: Evaluation,
    *,
    signer_fingerprint: str,
    progress: Progress | None = None,
    charts: bool = True,
) -> dict[str, Any]:
    """The benchmark report's context (``gates/reports/evaluation.html``).
    ``charts=False`` leaves the SVGs out (``attach_charts`` draws them)."""
    _progress(progress, 5, "Reading the evaluation")
    evaluation = _evaluation(evaluation)
    plan = json.loads(evaluation.plan_document)
    results = json.loads(evaluation.results_document)
    doc = json.loads(evaluation.evaluation_document)
    criteria = criterion_lines(plan, results, doc, evaluation.gate)
    stop_loss = stop_loss_lines(plan, doc, evaluation.gate)
    _progress(progress, 15, "Reading the runs and their environment")
    runs = run_lines(evaluation, doc)
    _progress(progress, 25, "Reading the decisions and the escrow deposits")
    decisions = [
        decision_line(d, evaluation.pk)
        for d in Decision.objects.filter(
            plan__rfp_id=evaluation.rfp_id,
            plan__vendor_organisation_id=evaluation.vendor_organisation_id,
            gate=evaluation.gate,
        )
        .select_related("decided_by", "second_by", "withdrawn_by")
        .order_by("decided_at", "id")
    ]
    bundle = evaluation.campaign.bundle
    deposits = []
    bundle_deposit = Deposit.objects.filter(
        kind=Deposit.Kind.BUNDLE, bundle=bundle
    ).first()
    if bundle_deposit is not None:
        deposits.append(_deposit_line("The bundle", bundle_deposit))
    output_ids = {r.output_log_index for r in runs if r.output_log_index is not None}
    for output in Deposit.objects.filter(log_index__in=output_ids).order_by(
        "log_index"
    ):
        deposits.append(_deposit_line("Run outputs", output))
    if evaluation.deposit is not None:
        deposits.append(_deposit_line("This evaluation", evaluation.deposit))
    head = log_head([d.log_index for d in deposits])
    drifted = [r for r in runs if r.drift_entries]
    hosts = [_text(h) for h in evaluation.campaign.hosts or []]
    context = {
        **_common(evaluation, doc),
        "kind": "Benchmark report",
        "bundle": _bundle_facts(evaluation),
        "criteria": criteria,
        "charted": [c for c in criteria if c.figure is not None],
        "stop_loss": stop_loss,
        "stop_loss_triggered": any(s.triggered for s in stop_loss),
        "runs": runs,
        "drifted_runs": drifted,
        "max_drift": evaluation.max_drift,
        "scenarios": _scenarios(evaluation, runs),
        "decisions": decisions,
        "disputes": dispute_lines(evaluation),
        "deposits": deposits,
        "log": head,
        "signer_fingerprint": signer_fingerprint,
        "lab": evaluation.campaign.pool.name,
        "hosts": hosts,
        "baselines": baseline_lines(plan, results, doc, evaluation.gate),
        "flagged_runs": [r for r in runs if r.flagged],
    }
    context["toc"] = report_sections(context)
    context["show_toc"] = len(context["toc"]) > TOC_MIN_SECTIONS
    if charts:
        _progress(progress, 35, "Drawing the charts")
        attach_charts(criteria)
    _progress(progress, 50, "The report's content is read")
    return context


SECTIONS: Final = (
    ("summary", "Summary"),
    ("bundle", "The bundle judged"),
    ("scenarios", "Scenarios"),
    ("criteria", "Criteria"),
    ("stop-loss", "Stop-loss conditions"),
    ("lab-facts", "How the lab ran it"),
    ("charts", "Charts"),
    ("environment", "Environment and drift"),
    ("runs", "Runs and their outputs"),
    ("decisions", "Decisions"),
    ("disputes", "Disputes"),
    ("escrow", "Escrow deposits and the transparency log"),
)


def report_sections(context: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's sections (its table of contents when there are more than
    ``TOC_MIN_SECTIONS``)."""
    present = {
        "charts": any(c.figure is not None for c in context["criteria"]),
        "stop-loss": bool(context["stop_loss"]),
        "decisions": bool(context["decisions"]),
        "disputes": bool(context["disputes"]),
    }
    return [(anchor, title) for anchor, title in SECTIONS if present.get(anchor, True)]


def certificate_context(
    decision: Decision,
    *,
    signer_fingerprint: str,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The acceptance certificate's context (``gates/reports/certificate.html``):
    the recorded promotion, both sign-offs, the evaluation it rests on and its
    criteria table."""
    _progress(progress, 5, "Reading the decision")
    decision = Decision.objects.select_related(
        "decided_by", "second_by", "withdrawn_by"
    ).get(pk=decision.pk)
    evaluation = _evaluation(decision.evaluation)
    plan = json.loads(evaluation.plan_document)
    results = json.loads(evaluation.results_document)
    doc = json.loads(evaluation.evaluation_document)
    criteria = criterion_lines(plan, results, doc, evaluation.gate)
    _progress(progress, 30, "Reading the escrow deposits")
    indexes = [i for i in (decision.log_index, evaluation.deposit.log_index
               if evaluation.deposit else None) if i is not None]  # fmt: skip
    context = {
        **_common(evaluation, doc),
        "kind": "Acceptance certificate",
        "bundle": _bundle_facts(evaluation),
        "decision": decision_line(decision, evaluation.pk),
        "disputes": dispute_lines(evaluation),
        "criteria": criteria,
        "log": log_head(indexes),
        "signer_fingerprint": signer_fingerprint,
    }
    _progress(progress, 50, "The certificate's content is read")
    return context
