"""What the lobby receives of the public stream and what its fold reads come from one
place (projections/lobby/projection.py, ``READ`` and ``UNREAD`` beside the fold): every
event type of the domain is one or the other, the consumer's filter lets through every
message holding a type the fold reads (whatever its mark says of the other events
beside it), and a type it does not read changes only the entry's version (issue 20;
docs/design/lobby.md, "Cost")."""

from __future__ import annotations

from lobby_tables import T0, entry_of, played
from studroom.domain.events import Event, PauseEnded, PauseStarted, SeatOffered
from studroom.projections.lobby.jetstream import consumer_config
from studroom.projections.lobby.projection import READ, UNREAD, apply
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import INTERESTS, mark_of
from subject_matching import matches


def _every_event_type(kind: type[Event] = Event) -> set[type[Event]]:
    """Every event type of the domain (not the tests' own made-up ones)."""
    found = set()
    for sub in kind.__subclasses__():
        found |= ({sub} if sub.__module__ == Event.__module__ else set()) | _every_event_type(sub)
    return found


def test_every_event_type_is_read_by_the_fold_or_named_unread_never_both() -> None:
    assert READ | UNREAD == _every_event_type()
    assert not READ & UNREAD


def test_the_lobby_s_consumer_receives_every_type_the_fold_reads() -> None:
    config = consumer_config("t")
    filters = [config.filter_subject] if config.filter_subject else list(config.filter_subjects or [])
    beside = [[], *([next(iter(i.events))] for i in INTERESTS)]         # what else the message holds
    for kind in READ:
        for others in beside:
            subject = subjects.public_message("t01", mark_of([kind.__name__, *others]))
            assert any(matches(f, subject) for f in filters), (kind, others)


def test_a_type_the_fold_does_not_read_changes_only_the_version() -> None:
    events = played(hands=1)
    entry = entry_of(events)
    for n, event in enumerate([PauseStarted(turn=9, deadline_ms=T0, pause_ms=0), PauseEnded(turn=9),
                               SeatOffered(player="p9", seat=5, until_ms=T0)], start=1):
        before = entry_of(events)
        after = apply(entry, event, before.version + n, before.seq + n, before.updated_ms)
        assert (after.version, after.seq) == (before.version + n, before.seq + n)
        after.version, after.seq = before.version, before.seq
        assert after == before
