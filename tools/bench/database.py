"""The PostgreSQL a benchmark measures: STUDROOM_DATABASE_URL, or an embedded one in a
throwaway folder."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from studroom.services.runtime.settings import Settings


@contextmanager
def bench_database() -> Iterator[tuple[str, str]]:
    """(database URL, where it is) for the length of the ``with`` block."""
    from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres

    database_url = Settings.from_env().database_url
    if database_url is not None:
        yield database_url, "STUDROOM_DATABASE_URL"
        return
    with ExitStack() as stack:
        data_dir = Path(tempfile.mkdtemp(prefix="studroom-bench-"))
        stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
        yield stack.enter_context(EmbeddedPostgres(data_dir)).url, f"embedded PostgreSQL in {data_dir}"
