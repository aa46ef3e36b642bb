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


@contextmanager
def store_servers(settings: Settings, stores: int, count: int) -> Iterator[dict[int, str]]:
    """Yield where the stores live beside the home server: ``STUDROOM_STORE_URLS`` when
    the settings name any; else, for ``count`` > 1 embedded PostgreSQL servers, store
    ``j`` on server ``j % count`` (``<data dir>/postgres-<i>``, started here and stopped on
    exit; the home server, ``postgres``, is server 0)."""
    if settings.store_urls or count <= 1:
        yield dict(settings.store_urls)
        return
    if settings.database_url is not None:
        raise ValueError("more embedded PostgreSQL servers beside an external STUDROOM_DATABASE_URL: "
                         "name the stores' servers in STUDROOM_STORE_URLS instead")
    with ExitStack() as stack:
        urls = [stack.enter_context(EmbeddedPostgres(settings.data_dir, folder=f"postgres-{i}")).url
                for i in range(1, count)]
        yield {j: urls[j % count - 1] for j in range(stores) if j % count}
