"""Read a rendered form back as a browser would submit it: the fields of the form posting to `action`, for tests
that save a page's form unchanged (GET the page, parse its fields, POST them back)."""

from __future__ import annotations

import html
from html.parser import HTMLParser


class _FormReader(HTMLParser):
    def __init__(self, action: str) -> None:
        super().__init__(convert_charrefs=True)
        self.action = action
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._select_first: str | None = None
        self._select_chosen = False
        self._option: dict[str, str | None] | None = None
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.inside = found.get("action") == self.action
            return
        if not self.inside:
            return
        name = found.get("name")
        if tag == "input" and name is not None and "disabled" not in found:
            kind = (found.get("type") or "text").lower()
            if kind in ("checkbox", "radio"):
                if "checked" in found:
                    self.fields.append((name, found.get("value") or "on"))
            elif kind not in ("submit", "button", "image", "reset", "file"):
                self.fields.append((name, found.get("value") or ""))
        elif tag == "select" and name is not None:
            self._select, self._select_first, self._select_chosen = name, None, False
        elif tag == "option" and self._select is not None:
            self._option = found
            self._text = []
        elif tag == "textarea" and name is not None:
            self._textarea, self._text = name, []

    def handle_data(self, data: str) -> None:
        if self._textarea is not None or self._option is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "option" and self._option is not None and self._select is not None:
            value = self._option.get("value")
            value = "".join(self._text) if value is None else value
            if self._select_first is None:
                self._select_first = value
            if "selected" in self._option and not self._select_chosen:
                self.fields.append((self._select, value))
                self._select_chosen = True
            self._option = None
        elif tag == "select" and self._select is not None:
            if not self._select_chosen and self._select_first is not None:
                self.fields.append((self._select, self._select_first))
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            # HTML drops one newline right after <textarea>; browsers send line breaks as CRLF.
            text = text.removeprefix("\n")
            self.fields.append((self._textarea, text.replace("\r\n", "\n").replace("\n", "\r\n")))
            self._textarea = None


def form_fields(page: str, action: str) -> list[tuple[str, str]]:
    """The (name, value) pairs the form whose action is `action` submits as rendered."""
    reader = _FormReader(html.unescape(action))
    reader.feed(page)
    return reader.fields


def as_post(fields: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Fields as a Django test client's POST data (repeated names as lists)."""
    data: dict[str, list[str]] = {}
    for name, value in fields:
        data.setdefault(name, []).append(value)
    return data
