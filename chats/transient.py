"""Failures that can heal: the server restarting, a connection dropped, a deadlock or a serialization failure (both
OperationalError). The one list of them: the work is tried again (a task retries with backoff, up to a bound), and
any other error is the work's own (a document rejected with the reason, a job or a run failed)."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
