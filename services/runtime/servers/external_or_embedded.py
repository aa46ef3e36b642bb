"""The two servers a room needs: the external ones named in the settings, embedded
ones for the others."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from ..settings import Settings
from .embedded_nats import EmbeddedNats
from .embedded_postgres import EmbeddedPostgres


@contextmanager
def servers(settings: Settings) -> Iterator[tuple[str, str]]:
    """Yield ``(nats_url, database_url)``: the external servers named in
    ``settings``, embedded ones in ``settings.data_dir`` for the others (stopped
    on exit).  An embedded NATS runs in operator mode (the room's Authority in
    ``<data dir>/auth``): connect with :func:`.credentials.credentials`."""
    with ExitStack() as stack:
        nats_url = settings.nats_url
        database_url = settings.database_url
        if nats_url is None or database_url is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        if database_url is None:
            database_url = stack.enter_context(EmbeddedPostgres(settings.data_dir)).url
        if nats_url is None:
            nats_url = stack.enter_context(EmbeddedNats(settings.data_dir)).url
        yield nats_url, database_url
