"""The gate checks of an evidence package (``reprogate evidence verify``), beyond
what ``artifacts.lib.evidence.verify`` checks of every package: no Django, only
the standard library, ``cryptography``, this engine, ``gates.lib.signing.statement``,
``benchmarks.lib`` (the run statements) and ``artifacts.lib`` (docs/reports.md,
"Checking a report").

For each ``evaluation`` deposit in the package:

1. its plan.json, results.json and evaluation.json blobs have the SHA-256 its
   leaf names (``plan_sha256``, ``results_sha256``, ``evaluation_sha256``);
2. the engine re-run on plan.json and results.json gives, for the leaf's gate,
   an evaluation document byte-identical to evaluation.json, with the leaf's
   verdict (else: "results.json / evaluation.json do not give this evaluation:
   <first difference>", naming the input whose digest is not the leaf's);
3. the bundle it judged is a deposit of the package too;
4. every run of results.json (the vendor's and, for a criterion held to the
   buyer's baseline, the baseline's) whose deposit is in the package has in
   results.json exactly the flagged anti-gaming checks its host signed (the
   ``checks`` of its statement's predicate, ``benchmarks.lib.evidence``): the
   stop-loss judged the checks the lab host made, not others.

For each ``report`` deposit (a benchmark report or an acceptance certificate):

1. report.pdf has the leaf's ``pdf_sha256``, statement.json its
   ``statement_sha256``;
2. statement.json is a DSSE envelope that verifies with ``keys/reports.pub``
   (the installation's statement key) and holds an in-toto Statement v1 with
   the test-result predicate;
3. its subjects name report.pdf with the PDF's digest and evaluation.json with
   the digest of the evaluation the leaf names (a deposit of the package), its
   result is that evaluation's verdict (PASS → PASSED, WARN → WARNED, else
   FAILED), its passed, warned and failed tests are the evaluation's criteria of
   those verdicts (INCONCLUSIVE ones failed), and its configuration names the
   plan's digest and the judged bundle's archive.

``keys/reports.pub`` is bound to the log by the download receipt like the
package's other keys (``artifacts.lib.evidence.verify``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from artifacts.lib.evidence.layout import BLOBS_DIR
from artifacts.lib.evidence.reader import Entry, EvidenceReport, PackageReader
from artifacts.lib.evidence.verify import PackageCheck
from artifacts.lib.signatures.statement import StatementError
from benchmarks.lib.evidence import signed_run_predicates
from benchmarks.lib.lab.checks import flagged_ids
from gates.lib.engine.documents import evaluation_bytes, load_json
from gates.lib.engine.evaluate import evaluate_plan
from gates.lib.engine.validate import InvalidDocument
from gates.lib.signing.statement import statement_open, statement_result

REPORTS_KEY: Final = "keys/reports.pub"
MAX_KEY: Final = 16 * 1024
MAX_DOCUMENT: Final = 256 * 1024 * 1024
MAX_STATEMENT: Final = 4 * 1024 * 1024
DOCUMENTS: Final = (
    ("plan.json", "plan_sha256"),
    ("results.json", "results_sha256"),
    ("evaluation.json", "evaluation_sha256"),
)
STATEMENT: Final = (("statement.json", "statement_sha256"),)
TESTS: Final = {
    "passedTests": ("PASS",),
    "warnedTests": ("WARN",),
    "failedTests": ("FAIL", "INCONCLUSIVE"),
}
SHOWN: Final = 60  # characters of a differing value in a message


@dataclass(frozen=True)
class Judged:
    """What a report's statement must agree with: an evaluation deposit."""

    evaluation_sha256: str
    plan_sha256: str
    verdict: str
    criteria: dict[str, str] | None  # criterion id → verdict (evaluation.json)
    bundle: str


# --- the first difference of two documents -------------------------------------------


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def first_difference(expected: Any, found: Any, path: str = "") -> str | None:
    """Where ``found`` (the file's document) first differs from ``expected`` (the
    re-evaluated one), as ``path: … in the file, … re-evaluated``; None if equal
    (types included: 1 and 1.0 and true differ, as their JSON does)."""
    where = path or "the document"
    if type(expected) is not type(found):
        return f"{where}: {_show(found)} in the file, {_show(expected)} re-evaluated"
    if isinstance(expected, dict):
        for key in sorted(set(expected) | set(found)):
            inner = f"{path}.{key}" if path else key
            if key not in found:
                return (
                    f"{inner}: missing in the file, {_show(expected[key])} re-evaluated"
                )
            if key not in expected:
                return f"{inner}: {_show(found[key])} in the file, absent re-evaluated"
            difference = first_difference(expected[key], found[key], inner)
            if difference:
                return difference
        return None
    if isinstance(expected, list):
        for position, (a, b) in enumerate(zip(expected, found, strict=False)):
            difference = first_difference(a, b, f"{path}[{position}]")
            if difference:
                return difference
        if len(expected) != len(found):
            return (
                f"{where}: {len(found)} items in the file, {len(expected)} re-evaluated"
            )
        return None
    if expected != found:
        return f"{where}: {_show(found)} in the file, {_show(expected)} re-evaluated"
    return None


def _bytes_difference(expected: bytes, found: bytes) -> str:
    try:
        document = load_json(found)
    except ValueError as error:
        return f"evaluation.json is not JSON ({error})"
    difference = first_difference(load_json(expected), document)
    if difference:
        return difference
    position = next(
        (i for i, (a, b) in enumerate(zip(expected, found, strict=False)) if a != b),
        min(len(expected), len(found)),
    )
    return f"evaluation.json is not canonical JSON (byte {position} differs)"


# --- reading the deposits' files ------------------------------------------------------


def _named(entry: Entry, path: str) -> dict[str, Any] | None:
    """The leaf's blob record of ``path`` (its sha256 is well formed: the blob
    check parsed every record before the gate checks run)."""
    blobs = entry.record.get("blobs") or []
    return next(
        (b for b in blobs if isinstance(b, dict) and b.get("path") == path), None
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(
    package: PackageReader,
    entry: Entry,
    subject: str,
    names: tuple[tuple[str, str], ...],
    limits: dict[str, int],
    report: EvidenceReport,
) -> dict[str, bytes] | None:
    """The files the leaf names (None, recorded, if one cannot be had), each
    checked against the leaf's digest field for it."""
    found: dict[str, bytes] = {}
    names_in_zip: dict[str, str] = {}
    for path, _field in names:
        blob = _named(entry, path)
        if blob is None:
            report.failed(subject, f"the leaf names no {path}")
            return None
        names_in_zip[path] = BLOBS_DIR + blob["sha256"]
        try:
            found[path] = package.blob(blob["sha256"], limits[path])
        except ValueError as error:
            report.failed(subject, f"cannot check {path}: {error}")
            return None
    for path, field in names:
        actual, logged = _sha(found[path]), entry.record.get(field)
        if actual != logged:
            report.failed(
                subject,
                f"{path} ({names_in_zip[path]}) has SHA-256 {actual}, not the "
                f"leaf's {field} {logged}",
            )
    return found


# --- evaluations ----------------------------------------------------------------------


def _changed_inputs(entry: Entry, files: dict[str, bytes]) -> str:
    """The inputs whose digest is neither the leaf's nor the one evaluation.json
    names in its ``inputs`` (both, when neither or each is)."""
    try:
        inputs = load_json(files["evaluation.json"]).get("inputs")
    except (ValueError, AttributeError):
        inputs = None
    inputs = inputs if isinstance(inputs, dict) else {}
    changed = [
        path
        for path, field in DOCUMENTS[:2]
        if _sha(files[path]) != entry.record.get(field)
        or _sha(files[path]) != inputs.get(field, entry.record.get(field))
    ]
    return " + ".join(changed or ["plan.json", "results.json"])


def _criteria(evaluation: bytes) -> dict[str, str] | None:
    try:
        document = load_json(evaluation)
        return {str(c["id"]): str(c["verdict"]) for c in document["criteria"]}
    except (ValueError, KeyError, TypeError):
        return None


def check_run_checks(
    results: Any,
    signed: dict[str, dict[str, Any]],
    subject: str,
    report: EvidenceReport,
) -> None:
    """results.json names each run's flagged checks as its host signed them."""
    runs = results.get("runs") if isinstance(results, dict) else None
    compared, wrong = 0, False
    for run in runs if isinstance(runs, list) else []:
        if not isinstance(run, dict) or str(run.get("id")) not in signed:
            continue
        compared += 1
        said = run.get("checks", [])
        host = flagged_ids(signed[str(run["id"])].get("checks"))
        if said != host:
            wrong = True
            report.failed(
                subject,
                f"results.json says run {run['id']} has the flagged checks "
                f"{_show(said)}; its host signed {_show(host)}",
            )
    if compared and not wrong:
        report.passed(
            subject,
            f"results.json names the flagged anti-gaming checks of its {compared} "
            "runs in the package as their hosts signed them",
        )


def _check_evaluation(
    package: PackageReader,
    entry: Entry,
    bundles: dict[str, str],
    report: EvidenceReport,
    signed: dict[str, dict[str, Any]] | None = None,
) -> Judged:
    """Re-evaluate; what the evaluation's reports must agree with: the leaf's
    digests and verdict (logged), evaluation.json's criteria if it can be read."""
    record = entry.record
    subject = f"evaluation {record.get('evaluation')} (leaf {entry.index})"
    if str(record.get("bundle")) not in bundles:
        report.failed(
            subject,
            f"the bundle it judged ({record.get('bundle')}) is not in the package",
        )
    limits = dict.fromkeys([p for p, _ in DOCUMENTS], MAX_DOCUMENT)
    files = _files(package, entry, subject, DOCUMENTS, limits, report)
    judged = Judged(
        evaluation_sha256=str(record.get("evaluation_sha256")),
        plan_sha256=str(record.get("plan_sha256")),
        verdict=str(record.get("verdict")),
        criteria=_criteria(files["evaluation.json"]) if files else None,
        bundle=bundles.get(str(record.get("bundle")), ""),
    )
    if files is None:
        return judged
    try:
        plan = load_json(files["plan.json"])
        results = load_json(files["results.json"])
    except ValueError as error:
        report.failed(
            subject, f"{_changed_inputs(entry, files)} cannot be read as JSON: {error}"
        )
        return judged
    check_run_checks(results, signed or {}, subject, report)
    try:
        documents = evaluate_plan(plan, results)
    except InvalidDocument as invalid:
        problems = "; ".join(str(p) for p in invalid.problems[:3])
        report.failed(
            subject,
            f"{_changed_inputs(entry, files)} are not valid gate documents: {problems}",
        )
        return judged
    gate = record.get("gate")
    document = next((d for d in documents if d["gate"] == gate), None)
    if document is None:
        report.failed(subject, f"plan.json has no gate {gate!r}, which the leaf names")
        return judged
    produced = evaluation_bytes(document)
    if produced != files["evaluation.json"]:
        difference = _bytes_difference(produced, files["evaluation.json"])
        report.failed(
            subject,
            f"{_changed_inputs(entry, files)} / evaluation.json do not give this "
            f"evaluation: {difference}",
        )
    elif document["verdict"] != record.get("verdict"):
        report.failed(
            subject,
            f"the leaf's verdict {record.get('verdict')!r} is not the evaluation's "
            f"{document['verdict']!r}",
        )
    else:
        report.passed(
            subject,
            f"re-evaluated gate {gate}: plan.json and results.json give "
            f"evaluation.json byte for byte ({document['verdict']})",
        )
    return judged


# --- reports --------------------------------------------------------------------------


def _descriptors(values: Any) -> dict[str, str]:
    """name → sha256 of in-toto ResourceDescriptors (malformed ones left out)."""
    found: dict[str, str] = {}
    for value in values if isinstance(values, list) else []:
        if isinstance(value, dict) and isinstance(value.get("digest"), dict):
            found[str(value.get("name"))] = str(value["digest"].get("sha256"))
    return found


def _statement_problems(
    statement: dict[str, Any], pdf_sha256: str, judged: Judged
) -> list[str]:
    problems = []
    subjects = _descriptors(statement.get("subject"))
    if subjects.get("report.pdf") != pdf_sha256:
        problems.append(
            f"the statement's subject report.pdf is {subjects.get('report.pdf')}, "
            f"not the PDF's SHA-256 {pdf_sha256}"
        )
    if subjects.get("evaluation.json") != judged.evaluation_sha256:
        problems.append(
            f"the statement's subject evaluation.json is "
            f"{subjects.get('evaluation.json')}, not the evaluation's "
            f"{judged.evaluation_sha256}"
        )
    predicate = statement.get("predicate")
    predicate = predicate if isinstance(predicate, dict) else {}
    expected = statement_result(judged.verdict)
    if predicate.get("result") != expected:
        problems.append(
            f"the statement's result {predicate.get('result')!r} is not {expected!r} "
            f"(the verdict {judged.verdict})"
        )
    criteria = judged.criteria
    for key, verdicts in TESTS.items() if criteria is not None else ():
        listed = predicate.get(key)
        wanted = {c for c, v in (criteria or {}).items() if v in verdicts}
        if not isinstance(listed, list) or set(map(str, listed)) != wanted:
            problems.append(
                f"the statement's {key} are not the evaluation's criteria "
                f"{'/'.join(verdicts)} ({', '.join(sorted(wanted)) or 'none'})"
            )
    configuration = _descriptors(predicate.get("configuration"))
    if configuration.get("plan.json") != judged.plan_sha256:
        problems.append("the statement's configuration does not name the plan's digest")
    if judged.bundle and configuration.get("bundle") != judged.bundle:
        problems.append(
            "the statement's configuration does not name the judged bundle's archive"
        )
    return problems


def _check_report(
    package: PackageReader,
    entry: Entry,
    key: bytes | None,
    evaluations: dict[str, Judged],
    report: EvidenceReport,
) -> None:
    record = entry.record
    subject = f"report {record.get('report')} (leaf {entry.index})"
    limits = {"statement.json": MAX_STATEMENT}
    pdf = _named(entry, "report.pdf")
    if pdf is None or pdf["sha256"] not in package.blobs:
        report.failed(subject, "cannot check report.pdf: it is not in the package")
        return
    digest = package.digest(BLOBS_DIR + pdf["sha256"])
    if digest is None:
        return  # recorded: the blob cannot be read
    pdf_sha256 = digest[0]
    if pdf_sha256 != record.get("pdf_sha256"):
        report.failed(
            subject,
            f"report.pdf ({BLOBS_DIR}{pdf['sha256']}) has SHA-256 {pdf_sha256}, "
            f"not the leaf's pdf_sha256 {record.get('pdf_sha256')}",
        )
    files = _files(package, entry, subject, STATEMENT, limits, report)
    if files is None:
        return
    judged = evaluations.get(str(record.get("evaluation")))
    if judged is None:
        report.failed(
            subject,
            f"the evaluation it reports ({record.get('evaluation')}) is not in "
            "the package",
        )
        return
    if record.get("evaluation_sha256") != judged.evaluation_sha256:
        report.failed(
            subject, "the leaf's evaluation_sha256 is not the evaluation's digest"
        )
    if key is None:
        report.failed(subject, f"cannot check statement.json: {REPORTS_KEY} is missing")
        return
    try:
        statement = statement_open(files["statement.json"], key)
    except StatementError as error:
        report.failed(
            subject, f"statement.json does not verify with {REPORTS_KEY}: {error}"
        )
        return
    problems = _statement_problems(statement, pdf_sha256, judged)
    for problem in problems:
        report.failed(subject, problem)
    if not problems and pdf_sha256 == record.get("pdf_sha256"):
        report.passed(
            subject,
            f"report.pdf is the leaf's; statement.json is signed by {REPORTS_KEY} "
            f"and names it and evaluation.json, result "
            f"{statement_result(judged.verdict)}",
        )


# --- the check ------------------------------------------------------------------------


def _bundles(entries: list[Entry]) -> dict[str, str]:
    """bundle id → its archive's SHA-256, of the package's bundle deposits."""
    found = {}
    for entry in entries:
        if entry.record.get("kind") != "bundle":
            continue
        archives = [
            b["sha256"]
            for b in entry.record.get("blobs") or []
            if isinstance(b, dict) and b.get("role") == "archive"
        ]
        found[str(entry.record.get("bundle"))] = archives[0] if archives else ""
    return found


def check_gates(
    package: PackageReader, entries: list[Entry], report: EvidenceReport
) -> None:
    """Every evaluation deposit, then every report deposit (module docstring)."""
    kinds = [entry.record.get("kind") for entry in entries]
    if "evaluation" not in kinds and "report" not in kinds:
        return  # a bundle's package
    bundles = _bundles(entries)
    evaluations: dict[str, Judged] = {}
    signed = signed_run_predicates(package, entries) if "evaluation" in kinds else {}
    for entry in entries:
        if entry.record.get("kind") == "evaluation":
            judged = _check_evaluation(package, entry, bundles, report, signed)
            evaluations[str(entry.record.get("evaluation"))] = judged
    key = package.read(REPORTS_KEY)
    for entry in entries:
        if entry.record.get("kind") == "report":
            _check_report(package, entry, key, evaluations, report)


GATE_CHECKS: Final = (
    PackageCheck("gate evaluations and reports", check_gates, {REPORTS_KEY: MAX_KEY}),
)
