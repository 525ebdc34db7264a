"""Remote images on the thread: a button naming the host instead of an <img>, unless the host is trusted; the CSP
allows no other image host (chats/remote_media.py, settings "Images")."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chats.models import Conversation, Source
from tests import factories

pytestmark = pytest.mark.django_db

SETTINGS_FILE = Path(__file__).resolve().parents[1] / "masterbrain_site" / "settings.py"

TRACKER = "https://tracker.example/pixel.png?thread=1&who=you"
PLAIN_HTTP = "http://plain.example:8080/gel.png"
DATA_IMAGE = "data:image/png;base64,iVBORw0KGgo="
TRUSTED_HOST = "files.lab.example.org"
TRUSTED = f"https://{TRUSTED_HOST}/gels/gapdh.png"
MARKDOWN_TRACKER = "https://markdown.example/beacon.gif"


def image_thread(source: Source, *, urls: list[str], answer: str = "Here it is.") -> Conversation:
    """A question with one image part per URL, and an answer in Markdown."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": "What is on this gel?"}]
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    messages = [{"role": "user", "content": parts}, {"role": "assistant", "content": answer}]
    return factories.ingest(source, {"chat_id": "images", "main_messages": messages}, format="chat_document")


def trust_image_hosts(settings: Any, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """The settings a deployment gets with MASTERBRAIN_TRUSTED_IMAGE_HOSTS=value: the settings module is run afresh
    with that environment, and its image hosts and CSP replace this run's (restored after the test)."""
    monkeypatch.setenv("MASTERBRAIN_TRUSTED_IMAGE_HOSTS", value)
    fresh = runpy.run_path(str(SETTINGS_FILE))
    settings.MASTERBRAIN_TRUSTED_IMAGE_HOSTS = fresh["MASTERBRAIN_TRUSTED_IMAGE_HOSTS"]
    settings.SECURE_CSP = fresh["SECURE_CSP"]


def placeholder(url: str, host: str, noun: str = "Image") -> str:
    escaped = url.replace("&", "&amp;")
    return (
        f'<button type="button" class="remote-media-open" data-remote-url="{escaped}" title="{escaped}">'
        f"{noun} from {host} — click to load (opens in a new tab)</button> "
        f'<span class="remote-media-url">{escaped}</span>'
    )


def web_images(html: str) -> list[str]:
    """The http(s) URLs of every <img> and <audio> in the page."""
    return re.findall(r'<(?:img|audio)\b[^>]*\bsrc="(https?:[^"]*)"', html, flags=re.IGNORECASE)


def csp(response: Any) -> dict[str, str]:
    directives = (part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
    return {name: value for name, value in directives}


def test_remote_image_parts_show_as_buttons_naming_their_host_and_data_images_inline(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = image_thread(source, urls=[TRACKER, PLAIN_HTTP, DATA_IMAGE, "javascript:alert(1)"])
    client.force_login(reviewer)

    html = client.get(conversation.get_absolute_url()).content.decode()

    assert web_images(html) == []
    assert placeholder(TRACKER, "tracker.example") in html
    assert placeholder(PLAIN_HTTP, "plain.example:8080") in html
    assert f'<img src="{DATA_IMAGE}" alt="Image attached to the message" referrerpolicy="no-referrer"' in html
    assert "Image not shown (not a plain http(s) or data: image URL): <code>javascript:alert(1)</code>" in html


def test_a_markdown_image_in_an_answer_shows_as_a_button_too(client: Client, reviewer: User, source: Source) -> None:
    answer = f'The gel: ![lane 3]({MARKDOWN_TRACKER} "bands") and a [link](https://docs.example/).'
    conversation = image_thread(source, urls=[], answer=answer)
    client.force_login(reviewer)

    html = client.get(conversation.get_absolute_url()).content.decode()

    assert web_images(html) == []
    assert placeholder(MARKDOWN_TRACKER, "markdown.example") in html
    assert '<a href="https://docs.example/" rel="noopener noreferrer nofollow">link</a>' in html


def test_remote_audio_shows_as_a_button_and_data_audio_plays_inline(
    client: Client, reviewer: User, source: Source
) -> None:
    parts = [
        {"type": "audio_url", "audio_url": {"url": "https://tracker.example/voice.mp3"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]
    document = {"chat_id": "audio", "main_messages": [{"role": "user", "content": parts}]}
    conversation = factories.ingest(source, document, format="chat_document")
    client.force_login(reviewer)

    html = client.get(conversation.get_absolute_url()).content.decode()

    assert web_images(html) == []
    assert placeholder("https://tracker.example/voice.mp3", "tracker.example", noun="Audio") in html
    assert '<audio controls preload="none" src="data:audio/wav;base64,UklGRg=="' in html


def test_by_default_the_csp_allows_images_and_audio_from_no_other_host(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = image_thread(source, urls=[TRACKER])
    client.force_login(reviewer)

    response = client.get(conversation.get_absolute_url())

    policy = csp(response)
    assert policy["img-src"] == "'self' data:"
    assert policy["media-src"] == "'self' data:"
    # Nor does anything the page links to learn which thread it was linked from.
    assert response["Referrer-Policy"] == "same-origin"


def test_images_of_a_trusted_host_load_inline_and_only_that_host_joins_the_csp(
    client: Client, reviewer: User, source: Source, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    trust_image_hosts(settings, monkeypatch, f" {TRUSTED_HOST.upper()} ,cdn.lab.example.org")
    markdown_trusted = f"https://{TRUSTED_HOST}/plots/amp.png"
    conversation = image_thread(source, urls=[TRUSTED, TRACKER], answer=f"See ![plot]({markdown_trusted}).")
    client.force_login(reviewer)

    response = client.get(conversation.get_absolute_url())

    html = response.content.decode()
    assert web_images(html) == [TRUSTED, markdown_trusted]
    for tag in re.findall(r"<img\b[^>]*>", html):
        assert 'referrerpolicy="no-referrer"' in tag, tag
    assert placeholder(TRACKER, "tracker.example") in html
    expected = f"'self' data: https://{TRUSTED_HOST} https://cdn.lab.example.org"
    assert csp(response)["img-src"] == expected
    assert csp(response)["media-src"] == expected
