"""The benchmark report and the acceptance certificate rendered to PDF from a real
evaluation: every criterion's id, verdict, estimate, interval and limit printed
exactly as the evaluation document has them (``pdftotext``), no raster image
(``pdfimages``), page numbers, both sign-offs on the certificate, vendor and buyer
text shown as text, and a renderer that fetches nothing but the project's static
files.

The tests that draw charts start Chromium (kaleido): without ``/usr/bin/chromium``
they skip locally and fail in CI, as the browser tests do."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from gates.lib.charts import criterion_repetitions
from gates.lib.report_charts import ChartError, checked_svg, figures_svg
from gates.models import Decision, Evaluation, GatePlan
from gates.selectors.evaluations import Repetition
from gates.selectors.report_content import (
    certificate_context,
    evaluation_report_context,
    num,
)
from gates.services.decisions import decision_record, decision_second
from gates.services.report_pdf import (
    ReportFetchRefused,
    StaticOnlyFetcher,
    count_pages,
    render_html,
    render_pdf,
    static_bytes,
)
from procurement.models import Rfp
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401
from tests.gates.engine.support import criterion
from tests.gates.support import (  # noqa: F401
    LAB,
    PASS,
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
    make_frozen_plan,
    plan_document,
)

pytestmark = pytest.mark.django_db

FINGERPRINT = "ab" * 32
TO = " \N{EN DASH} "  # between an interval's ends
HOSTILE = '<img src="http://127.0.0.1:9/leak.png"> & <b>bold</b>'


def _require_tool(name: str) -> None:
    if shutil.which(name) is None:
        reason = f"{name} is missing: apt-get install -y poppler-utils"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must check the PDFs, never skip)")
        pytest.skip(reason)


def pdftotext(pdf: bytes, tmp_path: Path) -> str:
    _require_tool("pdftotext")
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    done = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout


def pdfimages(pdf: bytes, tmp_path: Path) -> list[str]:
    """The image rows ``pdfimages -list`` prints (none for a vector PDF)."""
    _require_tool("pdfimages")
    path = tmp_path / "images.pdf"
    path.write_bytes(pdf)
    done = subprocess.run(
        ["pdfimages", "-list", str(path)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["page", "num"], done.stdout
    return [line for line in lines[2:] if line.strip()]


def flat(text: str) -> str:
    """pdftotext's text with its layout spaces folded (a cell may wrap)."""
    return re.sub(r"\s+", " ", text)


TWO_CRITERIA = [
    criterion(id="ttft-p99-cold-c1", scenario="cold-c1"),
    criterion(
        id="ttft-p99-cold-c1-abs",
        scenario="cold-c1",
        band={"abs": 12.5},
        blocking=False,
    ),
]


@pytest.fixture
def evaluation(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, evaluate: Any
) -> Evaluation:
    """A PASS of lab-validation on three runs, two criteria (a percent and an
    absolute band), hostile text in the RFP title and the vendor's name."""
    Rfp.objects.filter(pk=rfp.pk).update(title=f"Inference {HOSTILE}")
    Organisation.objects.filter(pk=vendor_a_org.pk).update(name=f"Acme {HOSTILE}")
    doc = plan_document(rfp.reference, vendor_a_org.slug, criteria=TWO_CRITERIA)
    plan = make_frozen_plan(rfp, vendor_a_org, buyer, doc)
    return evaluate(plan, PASS)


def document(evaluation: Evaluation) -> dict[str, Any]:
    return json.loads(evaluation.evaluation_document)


def test_the_report_prints_every_criterion_exactly_as_the_document_has_it(
    evaluation: Evaluation, tmp_path: Path
) -> None:
    context = evaluation_report_context(
        evaluation, signer_fingerprint=FINGERPRINT, charts=False
    )

    pdf = render_pdf("gates/reports/evaluation.html", context)
    text = flat(pdftotext(pdf, tmp_path))

    criteria = document(evaluation)["criteria"]
    assert len(criteria) == 2
    for c in criteria:
        low, high = c["ci"]
        figures = (
            f"Limit {num(c['limit'])} Estimate {num(c['estimate'])} "
            f"CI {num(low)}{TO}{num(high)}"
        )
        # the criterion's id, its verdict (right of its first line), its figures
        assert re.search(
            rf"{re.escape(c['id'])} .{{0,120}}? {c['verdict']} .{{0,80}}?"
            rf"Band .{{1,20}}? {re.escape(figures)}",
            text,
        ), c["id"]
    assert f"171.0{TO}178.9" in text  # repr of the float, not "171"
    assert "12.5 ms" in text  # the absolute band, with the unit
    assert evaluation.evaluation_sha256 in text
    assert FINGERPRINT in text


def test_pages_are_numbered_with_a_running_header_and_a_contents_page(
    evaluation: Evaluation, tmp_path: Path
) -> None:
    context = evaluation_report_context(
        evaluation, signer_fingerprint=FINGERPRINT, charts=False
    )

    pdf = render_pdf("gates/reports/evaluation.html", context)

    pages = count_pages(pdf)
    text = pdftotext(pdf, tmp_path)
    assert pages >= 2
    for page in range(1, pages + 1):
        assert f"page {page} of {pages}" in text
    reference = evaluation.rfp.reference
    assert text.count(f"{reference} · Benchmark report") >= pages
    contents = text.split("\f")[0]
    assert re.search(r"Criteria\s*\.+\s*\d+", contents), contents


def test_vendor_and_buyer_text_shows_as_text_and_fetches_nothing(
    evaluation: Evaluation, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    context = evaluation_report_context(
        evaluation, signer_fingerprint=FINGERPRINT, charts=False
    )
    context["criteria"][0].reason = f"Reason {HOSTILE}"

    html = render_html("gates/reports/evaluation.html", context)
    pdf = render_pdf("gates/reports/evaluation.html", context)

    assert "<img" not in html
    assert "&lt;img src=&quot;http://127.0.0.1:9/leak.png&quot;&gt;" in html
    text = flat(pdftotext(pdf, tmp_path))
    assert 'Inference <img src="http://127.0.0.1:9/leak.png"> & <b>bold</b>' in text
    assert 'Reason <img src="http://127.0.0.1:9/leak.png">' in text
    assert "Acme <img" in text
    assert pdfimages(pdf, tmp_path) == []
    assert "leak.png" not in caplog.text  # nothing even tried to fetch it


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/static/css/report.css",
        "http://127.0.0.1:8000/admin/",
        "https://example.com/static/css/report.css",
        "file:///etc/passwd",
        "ftp://reprogate.invalid/static/css/report.css",
        "https://reprogate.invalid/etc/passwd",
        "https://reprogate.invalid/static/../../../../etc/passwd",
        "https://reprogate.invalid/static/css/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "https://reprogate.invalid/static/css/report.css?x=1",
        "https://reprogate.invalid.example.com/static/css/report.css",
        "https://user@reprogate.invalid/static/css/report.css",
        "https://reprogate.invalid/static/css/missing.css",
        "https://reprogate.invalid/static/",
    ],
)
def test_the_fetcher_refuses_anything_but_a_static_file(url: str) -> None:
    with pytest.raises(ReportFetchRefused):
        StaticOnlyFetcher().fetch(url)


def test_the_fetcher_serves_the_report_stylesheet_and_data_urls() -> None:
    css = StaticOnlyFetcher().fetch("https://reprogate.invalid/static/css/report.css")
    data = StaticOnlyFetcher().fetch("data:text/plain;base64,aGk=")

    assert b"@page" in css.read()
    assert css.content_type == "text/css"
    assert data.read() == b"hi"
    assert static_bytes("https://reprogate.invalid/static/css/report.css").startswith(
        b"/*"
    )


def test_a_hostile_image_in_a_template_is_refused_not_fetched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    """Were a URL ever to reach the HTML unescaped, WeasyPrint asks the fetcher,
    which refuses it (logged), and the PDF has no image."""
    templates = tmp_path / "templates"
    (templates / "t").mkdir(parents=True)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG not really")
    (templates / "t" / "hostile.html").write_text(
        f'<p>x</p><img src="file://{secret}"><img src="http://127.0.0.1:9/a.png">'
        '<link rel="stylesheet" href="http://127.0.0.1:9/a.css">'
    )
    settings.TEMPLATES = [
        {**settings.TEMPLATES[0], "DIRS": [templates, *settings.TEMPLATES[0]["DIRS"]]}
    ]

    pdf = render_pdf("t/hostile.html", {})

    assert pdfimages(pdf, tmp_path) == []
    assert "may not fetch" in caplog.text
    assert str(secret) in caplog.text


def test_count_pages_reads_the_page_tree() -> None:
    with pytest.raises(ValueError, match="not a PDF"):
        count_pages(b"not a pdf")


def test_the_certificate_names_the_promotion_and_both_sign_offs(
    evaluation: Evaluation, buyer: Any, evaluator: Any, tmp_path: Path
) -> None:
    plan = GatePlan.objects.get(pk=evaluation.plan_id)
    pending = decision_record(
        plan=plan, gate=LAB, kind="promote", rationale=f"Meets {HOSTILE}", actor=buyer
    )
    decision = decision_second(decision=pending, actor=evaluator, note="Agreed.")
    assert decision.status == Decision.Status.RECORDED

    context = certificate_context(decision, signer_fingerprint=FINGERPRINT)
    pdf = render_pdf("gates/reports/certificate.html", context)

    text = flat(pdftotext(pdf, tmp_path))
    assert count_pages(pdf) <= 2
    assert "Acceptance certificate" in text
    assert f"Meets {HOSTILE}" in text
    assert "First sign-off buyer" in text
    assert "Second sign-off evaluator" in text
    assert "Agreed." in text
    assert f"Log index of the decision {decision.log_index}" in text
    assert evaluation.evaluation_sha256 in text
    for c in document(evaluation)["criteria"]:
        assert c["id"] in text
        assert num(c["estimate"]) in text
    assert "page 1 of" in text


def test_the_report_with_charts_is_vector_only(
    chromium: None, evaluation: Evaluation, tmp_path: Path
) -> None:
    steps: list[tuple[int, str]] = []
    context = evaluation_report_context(
        evaluation,
        signer_fingerprint=FINGERPRINT,
        progress=lambda pct, step: steps.append((pct, step)),
    )

    pdf = render_pdf("gates/reports/evaluation.html", context)

    assert all(c.svg and c.svg.startswith("<svg") for c in context["criteria"])
    html = render_html("gates/reports/evaluation.html", context)
    assert html.count('src="data:image/svg+xml;base64,') == len(context["criteria"])
    assert "<svg" not in html  # no markup of the charts enters the HTML
    assert pdfimages(pdf, tmp_path) == []
    text = pdftotext(pdf, tmp_path)
    assert "repetition" in text  # the chart's axis title, as text
    assert [pct for pct, _ in steps] == sorted(pct for pct, _ in steps)
    assert "Drawing the charts" in [step for _, step in steps]


@pytest.mark.parametrize(
    "svg",
    [
        '<svg><image href="http://127.0.0.1/x.png"/></svg>',
        '<svg><image xlink:href="data:image/png;base64,iVBOR"/></svg>',
        "<svg><script>alert(1)</script></svg>",
        '<svg><g onload="alert(1)"></g></svg>',
        '<svg><rect style="fill: url(http://127.0.0.1/p)"/></svg>',
        '<svg><use href="file:///etc/passwd#x"/></svg>',
        "<svg><foreignObject><p>x</p></foreignObject></svg>",
        "<p>not an svg</p>",
    ],
)
def test_a_chart_svg_with_anything_but_vectors_is_refused(svg: str) -> None:
    with pytest.raises(ChartError):
        checked_svg(svg)


def test_a_chart_svg_keeps_its_clip_paths_and_loses_its_links() -> None:
    svg = (
        '<svg><rect clip-path="url(\'#clip1\')"/><a xlink:href="http://evil/">'
        "ms</a></svg>"
    )

    kept = "<svg><rect clip-path=\"url('#clip1')\"/>ms</svg>"
    assert checked_svg(svg.encode()) == kept
    assert figures_svg([]) == []  # no Chromium started for nothing


def test_a_vendor_unit_in_a_chart_stays_text(chromium: None) -> None:
    reps = [Repetition(f"run-{i}", "s", i, 170.0 + i, "ms", {}, True) for i in (1, 2)]
    figure = criterion_repetitions(
        repetitions=reps,
        claim=180.0,
        limit=198.0,
        unit='ms <a href="http://127.0.0.1:9/">x</a> <img src="http://127.0.0.1:9/">',
    )
    assert figure is not None

    (svg,) = figures_svg([figure])

    assert "127.0.0.1" in svg  # as text
    assert "<a " not in svg
    assert "<img" not in svg
