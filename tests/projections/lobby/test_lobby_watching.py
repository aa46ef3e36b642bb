"""`studroom lobby --watch`'s picture of the tables and the lobby's word on which tables
a table service holds, without servers."""

from __future__ import annotations

import msgspec
from lobby_tables import T0, entry_of, played
from studroom.projections.lobby.leases import Leases
from studroom.projections.lobby.queries import LobbyQuery, select
from studroom.projections.lobby.watching import LobbyPicture
from studroom.services.wire.partitioning import partition_of


def test_the_watch_takes_the_newer_picture_and_keeps_the_answer_s_word_on_the_service() -> None:
    events = played(hands=2, timeouts=0.0)
    earlier, later = entry_of(events[:-10]), entry_of(events)
    picture = LobbyPicture(LobbyQuery())
    picture.answered(select([earlier], LobbyQuery(), T0, served=lambda table_id: False))
    assert "stopped" in picture.text()
    picture.written("t", msgspec.structs.replace(later))         # a write: figures as of its event
    assert picture.tables["t"].version == later.version and not picture.tables["t"].served
    assert picture.tables["t"].figures == later.figures and picture.tables["t"].figures.hands_per_hour == 2
    picture.answered(select([earlier], LobbyQuery(), T0))        # an older answer: its word on the service only
    assert picture.tables["t"].version == later.version and picture.tables["t"].served
    picture.written("t", None)
    assert picture.text() == "no tables"


def test_a_table_is_served_while_its_partition_s_lease_is_renewed() -> None:
    leases = Leases()
    assert leases.served("t1"), "before the first look the lobby calls no table stopped"
    leases.ttl = 3.0
    assert not leases.served("t1")
    leases.seen(f"p.{partition_of('t1')}", deleted=False)
    leases.seen("i.table-1", deleted=False)                      # an instance's announcement: no lease
    assert leases.served("t1")
    leases.ttl = 0.0                                             # its TTL passed without a renewal
    assert not leases.served("t1")
    leases.ttl = 3.0
    leases.seen(f"p.{partition_of('t1')}", deleted=True)         # given back
    assert not leases.served("t1")
