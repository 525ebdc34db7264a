"""The domain's errors: what a service refuses, in its own words.

Services raise these; nothing in a service knows about HTTP. Each is turned into a response in one place:
`chats.api.errors.exception_handler` for the API (DRF's exception handler), `chats.middleware.DomainErrorMiddleware`
for the pages. Every error carries a list of {"path": JSON pointer, "message": text}, the shape of API errors.
"""

from __future__ import annotations

from collections.abc import Sequence


class DomainError(Exception):
    """A request the domain refuses. `errors` says where (a JSON pointer into the input) and why."""

    status_code = 400

    def __init__(self, errors: Sequence[dict[str, str]] | str):
        if isinstance(errors, str):
            errors = [{"path": "", "message": errors}]
        self.errors: list[dict[str, str]] = list(errors)
        super().__init__("; ".join(f"{e['path']}: {e['message']}" if e["path"] else e["message"] for e in self.errors))

    @property
    def messages(self) -> list[str]:
        return [error["message"] for error in self.errors]


class InvalidInput(DomainError):
    """The input breaks a rule of the domain (a score out of range, a correction of a user message)."""

    status_code = 400


class NotAllowed(DomainError):
    """The actor may not do this to this object (someone else's feedback)."""

    status_code = 403
