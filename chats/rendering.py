"""Turning untrusted model output into safe HTML.

Markdown is rendered by markdown-it-py in the CommonMark preset with raw HTML off (so ``<script>`` stays text), then
the HTML is cleaned by nh3 with an allow-list: no script, no event handlers, no ``style``, links limited to http(s)
and mailto (and given ``rel="noopener noreferrer nofollow"``), images limited to what chats/remote_media.py lets a
page load (``data:image/`` URIs and trusted hosts), loaded lazily without a referrer; any other web image is rendered
as that module's placeholder button. nh3 runs even though markdown-it already escapes HTML: it is the one place
that decides what may reach the page, whatever the renderer does.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from functools import lru_cache, partial
from typing import Any

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from chats import remote_media

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "button", "code", "del", "em", "hr",
    "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    # Only the placeholder of a remote image (remote_media.placeholder); the filter below checks every value.
    "button": {"type", "class", "title", "data-remote-url"},
    "span": {"class"},
    "p": {"class"},
    "ol": {"start"},
    "code": {"class"},
    "th": {"colspan", "rowspan"},
    "td": {"colspan", "rowspan"},
}
LINK_SCHEMES = ("http:", "https:", "mailto:")


def _image(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A Markdown image: an <img> when the page may load it, else the placeholder of a remote image."""
    source = remote_media.media_source(tokens[idx].attrGet("src"), trusted=env["trusted"])
    if source.remote:
        return str(remote_media.placeholder(source))
    return RendererHTML.image(self, tokens, idx, options, env)


# Headings inside untrusted text keep their look but not their rank: the page's outline (its h1, the messages'
# h3) is the page's own, and a "# Title" in a message must not put an h1 in the middle of it.
HEADING_CLASSES = frozenset(f"md-heading md-h{level}" for level in range(1, 7))


def _heading_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    level = tokens[idx].tag[1:]
    return f'<p class="md-heading md-h{level}"><strong>'


def _heading_close(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return "</strong></p>\n"


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image)
    md.add_render_rule("heading_open", _heading_open)
    md.add_render_rule("heading_close", _heading_close)
    return md


_MD = _markdown()


def safe_link(url: str) -> bool:
    return url.strip().lower().startswith(LINK_SCHEMES)


def _attribute_filter(trusted: Collection[str], tag: str, attribute: str, value: str) -> str | None:
    if tag == "a" and attribute == "href":
        return value if safe_link(value) or value.startswith("#") else None
    if tag == "img" and attribute == "src":
        return value if remote_media.media_source(value, trusted=trusted).inline else None
    if tag == "button" and attribute == "data-remote-url":
        return value if remote_media.media_source(value, trusted=trusted).remote else None
    if tag == "button" and attribute == "type":
        return "button"
    if attribute == "class" and tag in {"button", "span"}:
        return value if value in remote_media.PLACEHOLDER_CLASSES else None
    if attribute == "class" and tag == "p":
        return value if value in HEADING_CLASSES else None
    if tag == "code" and attribute == "class":
        # Only the "language-xyz" hint of fenced code.
        return value if value.startswith("language-") and value.replace("-", "").isalnum() else None
    return value


def sanitize_html(html: str, trusted: Collection[str]) -> str:
    """Rendered Markdown through the allow-list; ``trusted``: the hosts whose images may stay <img>."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        attribute_filter=partial(_attribute_filter, trusted),
        url_schemes={"http", "https", "mailto", "data"},
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"img": {"referrerpolicy": "no-referrer", "loading": "lazy"}},
        clean_content_tags={"script", "style"},
        strip_comments=True,
    )


@lru_cache(maxsize=2048)
def _render(text: str, trusted: frozenset[str]) -> str:
    # The trusted hosts are part of the key: the same text renders otherwise when the setting differs.
    return sanitize_html(_MD.render(text, {"trusted": trusted}), trusted)


# A page shows this many characters of one text at most: a browser cannot lay out megabytes of one message (a single
# unbroken run stops wrapping at about two million characters), and a reviewer cannot read them. The whole text is
# stored and served by the API and the exports.
DISPLAY_CHARS = 100_000


def shortened_notice(total: int) -> str:
    return (
        f"Shown: the first {DISPLAY_CHARS:,} of {total:,} characters. "
        "The whole text is in the API and the exports of this conversation."
    )


def render_markdown(text: str) -> SafeString:
    """Untrusted Markdown as sanitized HTML, safe to put in a template; at most DISPLAY_CHARS of it."""
    if not text:
        return mark_safe("")
    if len(text) > DISPLAY_CHARS:
        notice = escape(shortened_notice(len(text)))
        html = _render(text[:DISPLAY_CHARS], remote_media.trusted_hosts())
        return mark_safe(f'{html}<p class="shortened" role="note">{notice}</p>')  # noqa: S308 - cleaned, escaped
    return mark_safe(_render(text, remote_media.trusted_hosts()))  # noqa: S308 - cleaned by nh3 with an allow-list


TOO_DEEP = "(nested too deeply to show)"


def pretty_json(value: object) -> str:
    """A value as indented JSON text (to be escaped by the template).

    Indenting runs Python's encoder, which recurses once per level; ingest stores whatever the C decoder reads
    (over a thousand levels). A value too deep to indent is shown compact (the C encoder goes as deep as the
    decoder did), and one too deep even for that says so, rather than fail the page.
    """
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
    except RecursionError:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except RecursionError:
            return TOO_DEEP
    if len(text) > DISPLAY_CHARS:
        return f"{text[:DISPLAY_CHARS]}\n… {shortened_notice(len(text))}"
    return text


def json_or_none(text: str) -> Any:
    """Decoded JSON when ``text`` is a JSON object or array, else None (also when it is nested too deeply to
    decode: it is then shown as text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return None


def plain(text: str) -> SafeString:
    """Plain text escaped, for callers that build HTML by hand."""
    return escape(text)
