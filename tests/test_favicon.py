"""The site's icon: an SVG every page links to, and /favicon.ico (which browsers ask for on their own) served."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client


def test_favicon_ico_is_served_from_the_site_root(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content  # type: ignore[attr-defined]
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO header: reserved 0, type 1 (icon)


def test_every_page_links_to_the_svg_icon(client: Client, reviewer: User) -> None:
    for path in ("/accounts/login/", "/admin/login/"):
        body = client.get(path).content.decode()
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in body, path
    client.force_login(reviewer)
    body = client.get("/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in body
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"
