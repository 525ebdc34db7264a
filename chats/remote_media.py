"""Which images and audio a page loads itself, and what it shows for the others.

A URL in a conversation was written by a model, a tool or whoever fed them: a page that loaded it would tell that
host each reviewer's address and when they opened the thread. So a page loads only ``data:`` URIs and https URLs
of the hosts named in ``MASTERBRAIN_TRUSTED_IMAGE_HOSTS`` (none by default); the Content-Security-Policy allows
those and nothing else (settings, "Images"). Any other http(s) image or audio is shown as a button that names its
host; pressing it opens the URL in a new tab, without a referrer (static/js/thread.js). A static CSP cannot allow
one image on one click, and a server that fetched the image for the page would fetch any URL a model wrote (SSRF).

``media_source`` makes the decision for every path that shows a URL: the image and audio parts of a message, and
the Markdown renderer and its sanitizer (chats/rendering.py).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from django.utils.html import format_html
from django.utils.safestring import SafeString

Verdict = Literal["inline", "remote", "refused"]
Kind = Literal["image", "audio"]

# scheme://host[:port] then the end or a path, query or fragment. The authority may hold no user name, backslash
# or white space, so the host read here is the host a browser goes to (a URL that is not this plain is refused).
_WEB_URL = re.compile(r"(https?)://([^/?#\\@:\s]+)(?::([0-9]{1,5}))?(?=[/?#]|$)[^\s\\]*", re.IGNORECASE)
URL_SHOWN_CHARS = 200
PLACEHOLDER_CLASSES = frozenset({"remote-media", "remote-media-open", "remote-media-url"})


@dataclass(frozen=True, slots=True)
class MediaSource:
    """What a page does with one URL: load it (``inline``), offer it behind a button (``remote``), or not show it."""

    url: str
    verdict: Verdict
    kind: Kind = "image"
    host: str = ""

    @property
    def inline(self) -> bool:
        return self.verdict == "inline"

    @property
    def remote(self) -> bool:
        return self.verdict == "remote"


def trusted_hosts() -> frozenset[str]:
    """The hosts whose https images and audio the pages load (``MASTERBRAIN_TRUSTED_IMAGE_HOSTS``)."""
    return frozenset(settings.MASTERBRAIN_TRUSTED_IMAGE_HOSTS)


def media_source(url: object, kind: Kind = "image", *, trusted: Collection[str] | None = None) -> MediaSource:
    """The one decision: may a page load ``url`` as an image (or audio) by itself?

    Inline: a ``data:image/`` (``data:audio/``) URI, or an https URL on the default port of a trusted host: the
    same hosts the CSP allows. Remote: any other http(s) URL, shown as a button naming its host. Refused: the rest
    (``javascript:``, ``file-service://``, a URL with a user name or a backslash in its authority, ...).
    """
    if not isinstance(url, str):
        return MediaSource("", "refused", kind)
    url = url.strip()
    # A data: image cannot run script when shown by <img> (even SVG), nor a data: audio by <audio>.
    if url[:5].lower() == "data:":
        verdict: Verdict = "inline" if url[5:].lower().startswith(f"{kind}/") else "refused"
        return MediaSource(url, verdict, kind)
    match = _WEB_URL.fullmatch(url)
    if not match:
        return MediaSource(url, "refused", kind)
    scheme, host, port = match.group(1).lower(), match.group(2).lower(), match.group(3)
    hosts = trusted_hosts() if trusted is None else trusted
    if scheme == "https" and port in (None, "443") and host in hosts:
        return MediaSource(url, "inline", kind, host)
    return MediaSource(url, "remote", kind, _shown_host(host) + (f":{port}" if port else ""))


def _shown_host(host: str) -> str:
    """The host as an address bar shows it: an internationalized name in its ASCII form, which a look-alike
    letter cannot disguise."""
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def placeholder(source: MediaSource) -> SafeString:
    """The button shown instead of a remote image or audio: its host in the label, the whole URL in its title and
    beside it. The same markup comes from a message's parts and from Markdown (which chats/rendering.py's
    sanitizer lets through: ``PLACEHOLDER_CLASSES``)."""
    noun = "Image" if source.kind == "image" else "Audio"
    shown = source.url if len(source.url) <= URL_SHOWN_CHARS else source.url[: URL_SHOWN_CHARS - 1] + "…"
    return format_html(
        '<span class="remote-media">'
        '<button type="button" class="remote-media-open" data-remote-url="{}" title="{}">'
        "{} from {} — click to load (opens in a new tab)</button> "
        '<span class="remote-media-url">{}</span></span>',
        source.url,
        source.url,
        noun,
        source.host,
        shown,
    )
