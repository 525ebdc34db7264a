"""What a page shows of texts and values too large or too deep to show whole."""

from __future__ import annotations

from chats import rendering
from chats.jinja2 import FLATTEN_DEPTH, flatten


def deep(levels: int) -> object:
    value: object = "bottom"
    for _ in range(levels):
        value = {"down": value}
    return value


def test_a_text_longer_than_a_page_shows_is_cut_with_a_note_saying_so():
    text = "<b>bold?</b> " + "W" * (rendering.DISPLAY_CHARS * 3)

    html = str(rendering.render_markdown(text))

    assert html.count("W") == rendering.DISPLAY_CHARS - len("<b>bold?</b> ")
    assert f"Shown: the first 100,000 of {len(text):,} characters." in html
    assert "<b>" not in html  # still sanitized


def test_a_text_within_the_limit_is_shown_whole_without_a_note():
    html = str(rendering.render_markdown("W" * rendering.DISPLAY_CHARS))

    assert html.count("W") == rendering.DISPLAY_CHARS and "Shown:" not in html


def test_a_large_json_value_is_cut_with_a_note():
    value = {"rows": ["x" * 100] * 5000}

    text = rendering.pretty_json(value)

    assert len(text) < rendering.DISPLAY_CHARS + 200
    assert text.startswith('{\n  "rows": [') and "characters. The whole text is in the API" in text


def test_json_too_deep_to_indent_is_shown_compact_rather_than_failing_the_page():
    value = deep(3000)

    text = rendering.pretty_json(value)

    assert text == rendering.TOO_DEEP or (text.startswith('{"down": {"down": ') and text.count("{") == 3000)


def test_a_deep_record_is_flattened_to_a_bounded_depth_and_the_rest_shown_as_json():
    rows = flatten({"record": deep(2000)})

    [(path, shown)] = rows
    assert path == "record" + ".down" * (FLATTEN_DEPTH - 1)
    assert shown.startswith('{\n  "down": {') or shown == rendering.TOO_DEEP


def test_headings_in_model_output_keep_their_look_but_not_a_place_in_the_page_outline() -> None:
    html = str(rendering.render_markdown("# Plasmid miniprep\n\n## Steps\n\ntext"))
    assert "<h1" not in html and "<h2" not in html
    assert '<p class="md-heading md-h1"><strong>Plasmid miniprep</strong></p>' in html
    assert '<p class="md-heading md-h2"><strong>Steps</strong></p>' in html


def test_a_paragraph_class_other_than_a_heading_level_is_dropped() -> None:
    html = rendering.sanitize_html(
        '<p class="md-heading md-h1 evil">x</p><p class="md-heading md-h2">y</p>', frozenset()
    )
    assert 'class="md-heading md-h1 evil"' not in html
    assert '<p class="md-heading md-h2">y</p>' in html
