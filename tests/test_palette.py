"""The palette (static/css/app.css): every colour is a custom property, in a light and a dark theme, and each
foreground meets WCAG 2.2 AA on every background it can sit on, computed from the file itself.

PAIRS is the one table of what sits on what: text needs 4.5:1 (1.4.3), the focus ring, input borders, the
violation border and chart bars 3:1 against what surrounds them (1.4.11).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = Path(__file__).resolve().parents[1] / "static" / "css" / "app.css"
TEXT, NON_TEXT = 4.5, 3.0

# Where text, links and statuses can sit: the page, cards, every message tint, tool calls, injections and the rest.
MESSAGE_BACKGROUNDS = ("surface", "user", "assistant", "system", "tool", "tool-bg", "inject-bg", "reasoning-bg")
CARD_BACKGROUNDS = ("bg", "surface", "sunken", "row-hover", "own-bg", "unanswered-bg", "violation-bg", "disagree-bg")
EVERYWHERE = MESSAGE_BACKGROUNDS + CARD_BACKGROUNDS

PAIRS: list[tuple[str, tuple[str, ...], float, str]] = [
    ("text", (*EVERYWHERE, "warn-bg", "danger-bg", "ok-bg", "flash-bg", "added-bg", "removed-bg"), TEXT, "body text"),
    ("text", ("badge-bg", "badge-tool", "badge-inject", "chip-bg"), TEXT, "badges and label chips"),
    ("muted", (*EVERYWHERE, "warn-bg"), TEXT, "times, permalinks, ids, captions (.muted.small)"),
    ("accent", (*EVERYWHERE, "flash-bg", "ok-bg", "warn-bg", "danger-bg"), TEXT, "links and summaries"),
    ("accent-strong", EVERYWHERE, TEXT, "links on hover"),
    ("on-accent", ("accent", "accent-strong"), TEXT, "primary buttons"),
    ("danger", (*EVERYWHERE, "danger-bg"), TEXT, "violations, errors, thumbs down"),
    ("ok", (*EVERYWHERE, "ok-bg"), TEXT, "permitted, resolved, reviewed, thumbs up"),
    ("warn-text", (*EVERYWHERE, "warn-bg"), TEXT, "warnings, imported badges, unresolved"),
    ("status-unreviewed", CARD_BACKGROUNDS, TEXT, "the unreviewed status"),
    ("fn", MESSAGE_BACKGROUNDS, TEXT, "tool names"),
    ("added-text", ("added-bg", "surface", "sunken"), TEXT, "added lines of a diff"),
    ("removed-text", ("removed-bg", "surface", "sunken"), TEXT, "removed lines of a diff"),
    ("header-text", ("header-bg",), TEXT, "the header's links"),
    ("header-muted", ("header-bg",), TEXT, "the signed-in name"),
    ("focus", (*EVERYWHERE, "header-bg"), NON_TEXT, "the :focus-visible outline"),
    ("border-strong", ("surface", "bg"), NON_TEXT, "input borders"),
    ("danger", ("surface", "violation-bg"), NON_TEXT, "the violation border"),
    ("bar-a", ("surface",), NON_TEXT, "chart bars"),
    ("bar-b", ("surface",), NON_TEXT, "chart bars"),
]

COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}\b|\brgba?\(|\bhsla?\(")


def blocks(css: str) -> tuple[str, str, str]:
    """The light :root block, the dark one, and the rest of the file."""
    light = re.search(r"^:root \{(.*?)^\}", css, re.S | re.M)
    dark = re.search(r"^@media \(prefers-color-scheme: dark\) \{\s*:root \{(.*?)\}\s*^\}", css, re.S | re.M)
    assert light and dark, "app.css starts with a light :root block and a prefers-color-scheme: dark one"
    rest = css[: light.start()] + css[light.end() : dark.start()] + css[dark.end() :]
    return light.group(1), dark.group(1), rest


def properties(block: str) -> dict[str, str]:
    block = re.sub(r"/\*.*?\*/", "", block, flags=re.S)
    return {name: value.strip() for name, value in re.findall(r"--([\w-]+):\s*([^;]+);", block)}


def themes() -> dict[str, dict[str, str]]:
    light, dark, _ = blocks(CSS.read_text())
    base = properties(light)
    return {"light": base, "dark": {**base, **properties(dark)}}


def rgb(value: str) -> tuple[float, float, float]:
    value = value.strip()
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
    found = re.fullmatch(r"rgba?\(\s*(\d+)[\s,]+(\d+)[\s,]+(\d+).*\)", value)
    assert found, f"not a colour: {value}"
    return (int(found[1]), int(found[2]), int(found[3]))


def luminance(colour: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(rgb(a)), luminance(rgb(b))), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula_is_wcags() -> None:
    assert round(contrast("#000000", "#ffffff"), 2) == 21.0
    assert round(contrast("#767676", "#ffffff"), 2) == 4.54
    assert round(contrast("#6f777f", "#f3f1fa"), 2) == 4.06


def test_no_rule_names_a_colour_outside_the_palette() -> None:
    _, _, rest = blocks(CSS.read_text())
    rest = re.sub(r"/\*.*?\*/", "", rest, flags=re.S)
    assert COLOUR.findall(rest) == []


def test_both_themes_define_the_same_colours() -> None:
    light, dark, _ = blocks(CSS.read_text())
    colours = {name for name, value in properties(light).items() if COLOUR.match(value)}
    assert colours == set(properties(dark)) - {"radius", "mono"}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_foreground_meets_aa_on_every_background_it_sits_on(theme: str) -> None:
    palette = themes()[theme]
    failing = [
        f"{fg} {palette[fg]} on {bg} {palette[bg]}: {contrast(palette[fg], palette[bg]):.2f} < {minimum} ({why})"
        for fg, backgrounds, minimum, why in PAIRS
        for bg in backgrounds
        if contrast(palette[fg], palette[bg]) < minimum
    ]
    assert failing == []
