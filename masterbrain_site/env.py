"""Small strict parsers for settings read from the environment.

A bad value stops the process at start with a message naming the variable, instead of running with a guess.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use one of 1/0, true/false, yes/no, on/off.")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} must be at least {minimum}.")
    return value


def env_int_renamed(name: str, old_name: str, default: int, *, minimum: int = 0) -> int:
    """A setting that was renamed: `old_name` is still read for one release when `name` is not set, and setting it
    prints a deprecation warning on stderr at start."""
    if old_name in os.environ:
        in_use = "ignored: " + name + " is set" if name in os.environ else "read for now"
        sys.stderr.write(
            f"Warning: {old_name} is deprecated and will be removed in the next release ({in_use}); "
            f"set {name} instead.\n"
        )
        if name not in os.environ:
            return env_int(old_name, default, minimum=minimum)
    return env_int(name, default, minimum=minimum)


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


def env_hosts(name: str) -> list[str]:
    """Comma-separated host names (files.example.org), lower-cased; none when unset. A scheme, port, path or
    wildcard is refused: each name stands for exactly that host."""
    hosts = [host.lower() for host in env_list(name, [])]
    for host in hosts:
        if not _HOST_NAME.fullmatch(host):
            raise ImproperlyConfigured(
                f"{name}: {host!r} is not a host name. Write names such as files.example.org, separated by commas, "
                "without scheme, port, path or wildcard."
            )
    return hosts


def env_networks(name: str) -> list[str]:
    """Comma-separated IP addresses or CIDR networks ("10.0.0.5, 192.168.0.0/16"), as networks ("10.0.0.5/32").
    Default: none. A host part in a network ("10.0.0.5/24") is refused: it is likely a typo, and trusting a whole
    network by mistake would let its every host claim any address."""
    networks = []
    for item in env_list(name, []):
        try:
            networks.append(str(ipaddress.ip_network(item)))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an IP address or a CIDR network.") from None
    return networks


def env_rate(name: str, default: str) -> str:
    """A throttle rate as DRF reads it: a count per period, e.g. 600/min (periods: s, sec, m, min, h, hour, d, day)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip()
    if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a rate: write a count per period, e.g. 600/min.")
    return value


def parse_database_url(name: str, url: str) -> dict[str, Any]:
    """postgres://user:password@host:port/name?sslmode=require or sqlite:///path/to/file.sqlite3"""
    parts = urlsplit(url)
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        if not parts.path.strip("/"):
            raise ImproperlyConfigured(f"{name}={url!r} names no database (postgres://user@host:5432/NAME).")
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured(f"{name}={url!r} has an invalid port.") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(port or ""),
            "OPTIONS": dict(parse_qsl(parts.query)),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    if parts.scheme == "sqlite":
        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
        if not path:
            raise ImproperlyConfigured(f"{name}={url!r}: use sqlite:///relative/path or sqlite:////absolute/path.")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path}
    raise ImproperlyConfigured(f"{name}={url!r}: the scheme must be postgres:// or sqlite:///.")
