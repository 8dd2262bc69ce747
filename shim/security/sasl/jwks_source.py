"""Where the secured OAUTHBEARER validator's keys come from: ``sasl.oauthbearer.jwks.endpoint.url``.

As in Kafka 3.9 (VerificationKeyResolverFactory): a ``file:`` URL is read once, at start-up; an ``http:`` or
``https:`` endpoint is read at start-up (the broker does not start without it), again every
``sasl.oauthbearer.jwks.endpoint.refresh.ms``, and at once when a token names a key id the set does not hold (a
token signed with a new key is refused, the next one after the refresh accepted; a missing key id triggers at most
one such read a minute, and ids longer than 1,000 characters none, as RefreshingHttpsJwks limits them). A failed
refresh keeps the keys read before and is retried after ``...retry.backoff.ms``, doubling, until
``...retry.backoff.max.ms`` have passed (then the next refresh is the scheduled one). An ``https`` endpoint is
trusted as Kafka's JaasOptionsUtils has it: through the ``ssl.*`` options of the listener's OAUTHBEARER JAAS entry
(``ssl.truststore.location`` and its kin, read as a Kafka client's keys), else the system's certificate authorities
(where Kafka uses the JVM's). The host name is always checked: jose4j reads the keys through an HttpsURLConnection,
whose host name check does not depend on ``ssl.endpoint.identification.algorithm``.
"""

from __future__ import annotations

import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.shim.os_threads import name_os_thread
from kafka_shim.shim.security.sasl.jwks import Jwk, JwksError, parse_jwks

log = get_logger("kafka_shim.sasl")

# RefreshingHttpsJwks: how long a missing key id waits before it may trigger another read, the longest id that
# triggers one, and how many such ids are remembered (the oldest forgotten first).
MISSING_KEY_ID_WAIT_S = 60.0
MISSING_KEY_ID_MAX_LENGTH = 1000
MISSING_KEY_ID_MAX_ENTRIES = 16
FETCH_TIMEOUT_S = 10.0


class JwksSourceError(ValueError):
    """The keys cannot be read at start-up: the broker does not start."""


class FileKeys:
    """A JWKS file, read once."""

    def __init__(self, path: Path, key: str) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise JwksSourceError(f"{key}: cannot read the JWKS file {path}: {exc.strerror or exc}") from None
        try:
            self._keys = parse_jwks(text, f"{key} ({path})")
        except JwksError as exc:
            raise JwksSourceError(str(exc)) from None

    def keys(self) -> list[Jwk]:
        return self._keys

    def missing_key(self, kid: str | None) -> None:
        pass


class EndpointKeys:
    """A JWKS endpoint, read at start-up, refreshed in a daemon thread of its own for the life of the process (one
    per configuration: shim.security.sasl.secured_settings keeps them, as Kafka keeps one resolver per
    configuration)."""

    def __init__(self, url: str, key: str, refresh_ms: int, backoff_ms: int, backoff_max_ms: int,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.url = url
        self._ssl_context = ssl_context
        self._key = key
        self._refresh_s = refresh_ms / 1000
        self._backoff_s = max(backoff_ms, 1) / 1000
        self._backoff_max_s = max(backoff_max_ms, backoff_ms, 1) / 1000
        self._missing: OrderedDict[str, float] = OrderedDict()
        self._wake = threading.Event()
        try:
            self._keys = self._fetch()
        except (OSError, JwksError) as exc:
            raise JwksSourceError(f"{key}={url}: the JWKS endpoint cannot be read at start-up: {exc}") from None
        self._thread = threading.Thread(target=self._run, name="kafka-shim-jwks", daemon=True)
        self._thread.start()

    def keys(self) -> list[Jwk]:
        return self._keys

    def missing_key(self, kid: str | None) -> None:
        if kid is None or len(kid) > MISSING_KEY_ID_MAX_LENGTH:
            return
        now = time.monotonic()
        if now - self._missing.get(kid, -MISSING_KEY_ID_WAIT_S) < MISSING_KEY_ID_WAIT_S:
            return
        self._missing[kid] = now
        self._missing.move_to_end(kid)
        if len(self._missing) > MISSING_KEY_ID_MAX_ENTRIES:
            self._missing.popitem(last=False)
        self._wake.set()

    def _fetch(self) -> list[Jwk]:
        with urllib.request.urlopen(self.url, timeout=FETCH_TIMEOUT_S, context=self._ssl_context) as answer:
            text = answer.read().decode("utf-8")
        return parse_jwks(text, f"{self._key} ({self.url})")

    def _run(self) -> None:
        name_os_thread()
        wait = self._refresh_s
        while True:
            self._wake.wait(wait if wait > 0 else None)
            self._wake.clear()
            self._refresh()

    def _refresh(self) -> None:
        """One refresh, retried with a doubling backoff until ``retry.backoff.max.ms`` have passed (Kafka's Retry);
        then the keys read before stay until the next one."""
        backoff, started = self._backoff_s, time.monotonic()
        while True:
            try:
                self._keys = self._fetch()
                return
            except (OSError, JwksError) as exc:
                give_up = time.monotonic() + backoff - started > self._backoff_max_s
                log.warning("jwks_refresh_failed", url=self.url, error=str(exc), retry_in_ms=None if give_up else int(backoff * 1000),
                            hint="the keys read before stay in use")
                if give_up:
                    return
                self._wake.wait(backoff)
                self._wake.clear()
                backoff = min(backoff * 2, self._backoff_max_s)


def open_keys(url: str, key: str, refresh_ms: int, backoff_ms: int, backoff_max_ms: int,
              ssl_context: Callable[[], ssl.SSLContext] | None = None) -> FileKeys | EndpointKeys:
    """The key source ``url`` names (ConfigurationUtils.validateUrl's and validateFile's checks, their words);
    ``ssl_context`` makes the context an ``https`` endpoint is read with (None: the system's defaults)."""
    parsed = urllib.parse.urlsplit(url)
    scheme = parsed.scheme.lower()
    if not scheme:
        raise JwksSourceError(f"The OAuth configuration option {key} contains a URL ({url}) that is missing the protocol")
    if scheme not in ("http", "https", "file"):
        raise JwksSourceError(f"The OAuth configuration option {key} contains a URL ({url}) that contains an invalid "
                              f"protocol ({scheme}); only \"http\", \"https\", and \"file\" protocol are supported")
    if scheme != "file":
        context = ssl_context() if scheme == "https" and ssl_context is not None else None
        return EndpointKeys(url, key, refresh_ms, backoff_ms, backoff_max_ms, context)
    path = Path(urllib.parse.unquote(parsed.path)).absolute()
    if not path.exists():
        raise JwksSourceError(f"The OAuth configuration option {key} contains a file ({path}) that doesn't exist")
    if path.is_dir():
        raise JwksSourceError(f"The OAuth configuration option {key} references a directory ({path}), not a file")
    return FileKeys(path, key)
