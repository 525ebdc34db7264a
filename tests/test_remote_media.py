"""The one decision on image and audio URLs (chats/remote_media.py), the Markdown sanitizer that applies it, and
the setting it reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chats import remote_media, rendering
from tests.test_settings import run_check

TRUSTED = frozenset({"files.lab.example.org"})


@pytest.mark.parametrize(
    ("url", "verdict", "host"),
    [
        ("data:image/png;base64,iVBORw0KGgo=", "inline", ""),
        (" DATA:image/svg+xml;base64,PHN2Zz4= ", "inline", ""),
        ("https://files.lab.example.org/gel.png", "inline", "files.lab.example.org"),
        ("HTTPS://Files.Lab.Example.org:443/gel.png", "inline", "files.lab.example.org"),
        # Not the trusted host as the CSP names it (https, default port): shown behind a button.
        ("http://files.lab.example.org/gel.png", "remote", "files.lab.example.org"),
        ("https://files.lab.example.org:8443/gel.png", "remote", "files.lab.example.org:8443"),
        ("https://files.lab.example.org.evil.example/gel.png", "remote", "files.lab.example.org.evil.example"),
        ("https://tracker.example/p.gif?id=1#x", "remote", "tracker.example"),
        ("https://tracker.example", "remote", "tracker.example"),
        # A look-alike name (a Cyrillic i) is shown as the browser's address bar shows it.
        ("https://f\u0456les.lab.example.org/gel.png", "remote", "xn--fles-l9d.lab.example.org"),
        # A URL whose host a browser reads otherwise than a plain parser: not shown at all.
        ("https://user@files.lab.example.org/gel.png", "refused", ""),
        ("https://tracker.example\\@files.lab.example.org/gel.png", "refused", ""),
        ("https://files.lab.example.org /gel.png", "refused", ""),
        ("https:/tracker.example/gel.png", "refused", ""),
        ("javascript:alert(1)", "refused", ""),
        ("data:text/html;base64,PHNjcmlwdD4=", "refused", ""),
        ("file-service://file-7QmZbR3x1sWk9Ydc2TnA5p", "refused", ""),
        ("", "refused", ""),
        (None, "refused", ""),
    ],
)
def test_which_image_urls_a_page_loads_itself(url: Any, verdict: str, host: str) -> None:
    source = remote_media.media_source(url, trusted=TRUSTED)

    assert (source.verdict, source.host) == (verdict, host)


def test_audio_is_decided_like_images_with_its_own_data_type() -> None:
    assert remote_media.media_source("data:audio/wav;base64,UklGRg==", "audio", trusted=TRUSTED).inline
    assert not remote_media.media_source("data:image/png;base64,AAAA", "audio", trusted=TRUSTED).inline
    assert remote_media.media_source("https://files.lab.example.org/a.mp3", "audio", trusted=TRUSTED).inline
    assert remote_media.media_source("https://tracker.example/a.mp3", "audio", trusted=TRUSTED).remote


def test_the_sanitizer_keeps_no_remote_img_and_no_forged_placeholder_even_when_given_raw_html() -> None:
    # Markdown never yields this HTML (raw HTML is off); the sanitizer refuses it all the same.
    html = (
        '<img src="https://tracker.example/p.gif"><img src="https://files.lab.example.org/ok.png">'
        '<button type="submit" class="primary" data-remote-url="javascript:alert(1)" formaction="/x">go</button>'
        '<span class="remote-media-url" style="color:red">u</span>'
    )

    cleaned = rendering.sanitize_html(html, TRUSTED)

    assert "tracker.example" not in cleaned
    assert 'src="https://files.lab.example.org/ok.png"' in cleaned
    assert '<button type="button">go</button>' in cleaned
    assert '<span class="remote-media-url">u</span>' in cleaned


def test_a_cached_rendering_follows_the_setting(settings: Any) -> None:
    text = "![gel](https://files.lab.example.org/cached.png)"
    settings.MASTERBRAIN_TRUSTED_IMAGE_HOSTS = []
    assert "<img" not in rendering.render_markdown(text)

    settings.MASTERBRAIN_TRUSTED_IMAGE_HOSTS = ["files.lab.example.org"]
    assert '<img src="https://files.lab.example.org/cached.png"' in rendering.render_markdown(text)


@pytest.mark.parametrize("value", ["https://files.example.org", "*.example.org", "files.example.org:8443", "a b"])
def test_a_trusted_image_host_that_is_not_a_host_name_fails_at_start(tmp_path: Path, value: str) -> None:
    result = run_check(tmp_path, DEBUG="1", MASTERBRAIN_TRUSTED_IMAGE_HOSTS=f"lab.example.org,{value}")

    assert result.returncode == 2
    assert result.stderr.startswith("Configuration error:") and "MASTERBRAIN_TRUSTED_IMAGE_HOSTS" in result.stderr
