"""Message content as parts (chats/ingest/parts.py): strings, text, images, audio, files and refusals in every
spelling the formats use, unknown parts kept verbatim, and errors at their JSON path."""

import pytest

from chats.formats.canonical import Issues
from chats.ingest.parts import content_parts, render_text


def parts_of(content):
    issues = Issues()
    parts = content_parts(content, "/0/content", issues)
    assert issues.errors == []
    return parts


def test_string_content_becomes_one_text_part():
    assert parts_of("Hello") == [{"type": "text", "text": "Hello"}]


def test_empty_string_and_null_content_have_no_parts():
    assert parts_of("") == []
    assert parts_of(None) == []


def test_text_part():
    assert parts_of([{"type": "text", "text": "Lane 3"}]) == [{"type": "text", "text": "Lane 3"}]


def test_image_url_as_bare_string_becomes_an_image_part():
    part = {"type": "image_url", "image_url": "https://example.com/gel.png"}
    assert parts_of([part]) == [{"type": "image", "url": "https://example.com/gel.png"}]


def test_image_url_object_keeps_url_and_detail():
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}}
    assert parts_of([part]) == [{"type": "image", "url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}]


def test_input_image_part_from_the_responses_api():
    part = {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"}
    assert parts_of([part]) == [{"type": "image", "url": "https://example.com/a.png", "detail": "low"}]


def test_input_audio_part_keeps_data_and_format():
    part = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    assert parts_of([part]) == [{"type": "audio", "data": "UklGRg==", "format": "wav"}]


def test_audio_part_with_a_url():
    assert parts_of([{"type": "audio", "audio": {"url": "https://example.com/a.wav"}}]) == [
        {"type": "audio", "url": "https://example.com/a.wav"}
    ]


def test_file_part_keeps_only_the_fields_given():
    part = {"type": "file", "file": {"file_id": "file-123", "filename": "run.csv"}}
    assert parts_of([part]) == [{"type": "file", "file_id": "file-123", "filename": "run.csv"}]


def test_refusal_part():
    assert parts_of([{"type": "refusal", "refusal": "I can't help with that."}]) == [
        {"type": "refusal", "refusal": "I can't help with that."}
    ]


def test_parts_without_a_type_are_understood():
    parts = parts_of([{"text": "And this one?"}, {"image": "https://example.com/b.png"}, {"audio": "https://x/a.wav"}])
    assert parts == [
        {"type": "text", "text": "And this one?"},
        {"type": "image", "url": "https://example.com/b.png"},
        {"type": "audio", "url": "https://x/a.wav"},
    ]


def test_untyped_audio_without_a_scheme_is_base64_data():
    assert parts_of([{"audio": "UklGRiQAAABXQVZF"}]) == [{"type": "audio", "data": "UklGRiQAAABXQVZF"}]


def test_bare_string_inside_a_list_becomes_a_text_part():
    assert parts_of(["Bands look sharper."]) == [{"type": "text", "text": "Bands look sharper."}]


def test_unknown_part_is_kept_verbatim():
    part = {"type": "video_url", "video_url": {"url": "https://example.com/v.mp4"}}
    assert parts_of([part]) == [{"type": "unknown", "raw": part}]


def test_known_type_with_unusable_fields_is_kept_as_unknown():
    part = {"type": "image_url", "image_url": 42}
    assert parts_of([part]) == [{"type": "unknown", "raw": part}]


@pytest.mark.parametrize("bad_part", [55, None, ["nested"], True])
def test_part_that_is_neither_object_nor_string_is_an_error_at_its_path(bad_part):
    issues = Issues()
    content_parts([{"type": "text", "text": "ok"}, bad_part], "/main_messages/0/content", issues)
    assert [error.path for error in issues.errors] == ["/main_messages/0/content/1"]


@pytest.mark.parametrize("content", [12, {"type": "text", "text": "x"}, True])
def test_content_that_is_not_string_null_or_list_is_an_error(content):
    issues = Issues()
    content_parts(content, "/3/content", issues)
    assert [error.path for error in issues.errors] == ["/3/content"]


def test_text_rendering_joins_text_and_refusals_with_newlines():
    parts = [
        {"type": "text", "text": "First"},
        {"type": "image", "url": "https://example.com/a.png"},
        {"type": "refusal", "refusal": "Not that."},
        {"type": "text", "text": "Last"},
    ]
    assert render_text(parts) == "First\nNot that.\nLast"
