"""One colour language: the five verdict colours are custom properties
of app.css, every badge and state label has WCAG AA contrast (4.5:1 for its text on
its own background), and states that are no verdict and no warning (an opened
tender, a mandatory artifact) are not painted in the warning colour."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from accounts.models import Organisation
from procurement.models import RequiredArtifact, Rfp
from tests.procurement.factories_rfps import published_rfp

CSS = Path(settings.BASE_DIR) / "static" / "css"
VERDICTS = ("pass", "warn", "fail", "inconclusive", "sealed")
# Label families and the class whose colours a member inherits.
FAMILIES = {
    "badge": ".badge",
    "status": ".status",
    "run-state": ".run-state",
    "host": ".run-state",  # host-* and drift-* are used with .run-state
    "drift": ".run-state",
    "msg": ".msg",
}
LABEL = re.compile(r"^\.(badge|status|run-state|host|drift|msg)(-[\w-]+)?$")
AA = 4.5


def _rules() -> list[tuple[list[str], dict[str, str]]]:
    rules = []
    for path in sorted(CSS.glob("*.css")):
        text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
        text = re.sub(r"@media[^{]*\{((?:[^{}]*\{[^{}]*\})*)[^{}]*\}", "", text)
        for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", text):
            decls = {}
            for decl in body.split(";"):
                if ":" in decl:
                    name, value = decl.split(":", 1)
                    decls[name.strip()] = value.strip()
            rules.append(([s.strip() for s in selectors.split(",")], decls))
    return rules


def _root() -> dict[str, str]:
    props: dict[str, str] = {}
    for selectors, decls in _rules():
        if ":root" in selectors:
            props.update({k: v for k, v in decls.items() if k.startswith("--")})
    return props


def _colour(value: str, props: dict[str, str]) -> str:
    while (var := re.fullmatch(r"var\((--[\w-]+)\)", value)) is not None:
        value = props[var.group(1)]
    if re.fullmatch(r"#[0-9a-fA-F]{3}", value):
        value = "#" + "".join(c * 2 for c in value[1:])
    assert re.fullmatch(r"#[0-9a-fA-F]{6}", value), f"not a plain colour: {value}"
    return value.lower()


def _luminance(hex_colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(fg: str, bg: str) -> float:
    light, dark = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _labels() -> dict[str, dict[str, str]]:
    """Every badge/state class with its own declarations (merged across files)."""
    found: dict[str, dict[str, str]] = {}
    for selectors, decls in _rules():
        for selector in selectors:
            if LABEL.match(selector):
                found.setdefault(selector, {}).update(decls)
    return found


def _resolved(selector: str) -> tuple[str, str]:
    """(text, background) of a label, inheriting from its family's base class."""
    props, labels = _root(), _labels()
    family = LABEL.match(selector).group(1)
    base = labels.get(FAMILIES[family], {})
    own = labels[selector]
    text = own.get("color") or base.get("color") or props["--text"]
    background = own.get("background") or base.get("background") or "#ffffff"
    return _colour(text, props), _colour(background, props)


def test_contrast_helper_matches_known_ratios() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_the_five_verdict_colours_are_custom_properties() -> None:
    props = _root()
    for verdict in VERDICTS:
        assert f"--{verdict}" in props
        assert f"--{verdict}-bg" in props
        text = _colour(f"var(--{verdict})", props)
        background = _colour(f"var(--{verdict}-bg)", props)
        assert contrast(text, background) >= AA, verdict
        assert contrast(text, _colour("var(--surface)", props)) >= AA, verdict


def test_every_label_class_is_found() -> None:
    labels = _labels()
    for name in (".badge-pass", ".status-opened", ".badge-tag", ".run-state-failed"):
        assert name in labels


@pytest.mark.parametrize("selector", sorted(_labels()))
def test_label_text_has_aa_contrast_on_its_background(selector: str) -> None:
    text, background = _resolved(selector)
    assert contrast(text, background) >= AA, f"{selector}: {text} on {background}"


@pytest.mark.parametrize("selector", [".status-opened", ".badge-tag"])
def test_states_that_are_no_warning_are_not_amber(selector: str) -> None:
    props = _root()
    amber = {_colour("var(--warn)", props), _colour("var(--warn-bg)", props)}
    assert not amber & set(_resolved(selector))


def test_sealed_is_purple() -> None:
    props = _root()
    sealed = (_colour("var(--sealed)", props), _colour("var(--sealed-bg)", props))
    assert _resolved(".status-closed") == sealed
    assert _resolved(".badge-sealed") == sealed


@pytest.mark.django_db
def test_mandatory_artifact_is_a_label_not_a_warning(
    client_for: object,
    buyer: object,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    assert rfp.status == Rfp.Status.PUBLISHED
    assert RequiredArtifact.objects.filter(rfp=rfp, mandatory=True).exists()

    page = client_for(buyer).get(  # type: ignore[operator]
        reverse("procurement:rfp_detail", args=[rfp.public_id])
    )

    html = page.content.decode()
    assert '<span class="badge badge-tag">mandatory</span>' in html
    assert "badge-warn" not in html
