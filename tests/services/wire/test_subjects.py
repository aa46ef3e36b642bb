"""The room's subject names (services/wire/subjects.py): each wildcard covers exactly
the subjects it stands for, the senders read back from the subjects they send on, and
an id that cannot be a subject token is refused."""

from __future__ import annotations

import pytest
from subject_matching import matches
from studroom.services.wire import subjects
from studroom.services.wire.subjects import BadName


@pytest.mark.parametrize(("pattern", "inside", "outside"), [
    (subjects.all_public_events(), subjects.public_message("t1", "plain"), subjects.private_events("alice", "t1")),
    (subjects.player_private_events("alice"), subjects.private_events("alice", "t1"),
     subjects.private_events("bob", "t1")),
    (subjects.table_private_events("t1"), subjects.private_events("bob", "t1"), subjects.private_events("bob", "t2")),
    (subjects.all_private_events(), subjects.private_events("bob", "t2"), subjects.public_message("t2", "plain")),
    (subjects.all_commands(), subjects.preflight_probe("service", "timer"), subjects.command_from("player", "a", "t")),
    (subjects.commands_as("player", "alice"), "studroom.pcmd.3.t1.player.alice", "studroom.pcmd.3.t1.player.bob"),
    (subjects.all_relay_nudges(), subjects.relay_nudge("studroom_p3"), subjects.public_message("t1", "plain")),
    (subjects.public_events("t1"), subjects.public_message("t1", "plain"), subjects.public_message("t2", "plain")),
    (subjects.public_marked("left"), subjects.public_message("t2", "left"), subjects.public_message("t2", "turn_left")),
    (subjects.all_public_events(), subjects.public_message("t2", "plain"), subjects.private_events("bob", "t2")),
    (subjects.all_timer_schedules(), subjects.timer_schedule("t1"), subjects.timer_fire("t1")),
    (subjects.all_timer_fires(), subjects.timer_fire("t1"), subjects.turn_notice("t1")),
    (subjects.all_turn_notices(), subjects.turn_notice("t1"), subjects.timer_schedule("t1")),
    (subjects.all_timer_subjects(), subjects.turn_notice("t1"), subjects.command_from("service", "timer", "t1")),
    (subjects.inbox("player", "alice"), subjects.inbox_prefix("player", "alice") + ".x1",
     subjects.inbox_prefix("player", "bob") + ".x1"),
    (subjects.role_inboxes("operator"), subjects.inbox_prefix("operator", "floor") + ".x1",
     subjects.inbox_prefix("player", "floor") + ".x1"),
    (subjects.all_inboxes(), subjects.inbox_prefix("spectator", "eve") + ".x1", subjects.public_message("t1", "plain")),
    (subjects.lobby_changes(), f"$KV.{subjects.LOBBY_BUCKET}.t1", f"$KV.{subjects.LEASE_BUCKET}.p.1"),
    (subjects.bucket_writes(subjects.LEASE_BUCKET), f"$KV.{subjects.LEASE_BUCKET}.p.1",
     f"$KV.{subjects.RELAY_BUCKET}.p.1"),
    (subjects.all_cashier_requests(), subjects.cashier_requests("player", "alice"),
     subjects.history_requests("player", "alice")),
    (subjects.health_asked("table"), subjects.health("table", "operator", "floor"),
     subjects.health("relay", "operator", "floor")),
    (subjects.health_as("operator", "floor"), subjects.health("relay", "operator", "floor"),
     subjects.health("relay", "operator", "other")),
])
def test_each_wildcard_covers_its_own_subjects_only(pattern: str, inside: str, outside: str) -> None:
    assert matches(pattern, inside)
    assert not matches(pattern, outside)


def test_the_table_service_reads_the_sender_from_the_mapped_subject() -> None:
    mapped = subjects.partition_command(7, "t1", "operator", "floor")
    assert mapped == "studroom.pcmd.7.t1.operator.floor" and matches(subjects.commands_in_partition(7), mapped)
    assert matches(subjects.commands_as("operator", "floor"), mapped)
    assert subjects.sender_of(mapped) == ("t1", "operator", "floor")
    for forged in ("studroom.pcmd.7.t1.king.floor", "studroom.cmd.t1.alice", "studroom.pcmd.7.t1.player.a.b"):
        with pytest.raises(BadName):
            subjects.sender_of(forged)


def test_each_role_command_subject_is_mapped_onto_a_partition() -> None:
    mapping = subjects.role_command_mapping(partitions=4)
    assert set(mapping) == {"studroom.cmd.*.*", "studroom.op.*.*", "studroom.svc.*.*"}
    assert mapping["studroom.op.*.*"] == "studroom.pcmd.{{partition(4,1)}}.{{wildcard(1)}}.operator.{{wildcard(2)}}"
    assert matches("studroom.cmd.*.*", subjects.command_from("player", "alice", "t1"))


@pytest.mark.parametrize("desk", [subjects.CASHIER, subjects.HISTORY, subjects.LOBBY])
def test_a_desk_reads_back_the_sender_of_each_of_its_roles(desk: subjects.Desk) -> None:
    for role in desk.roles:
        subject = desk.of(role, "alice")
        assert matches(desk.every(), subject) and desk.sender(subject) == (role, "alice")
    with pytest.raises(BadName):
        desk.of("nobody", "alice")
    with pytest.raises(BadName):
        desk.sender(f"{desk.where}.nobody.alice")


def test_health_is_asked_by_operators_of_any_service() -> None:
    subject = subjects.health("relay", "operator", "floor")
    assert subjects.health_sender(subject) == ("operator", "floor")
    with pytest.raises(BadName):
        subjects.health("relay", "player", "alice")


@pytest.mark.parametrize("bad", ["", "a.b", "a*", ">", "a b", "x" * 65])
def test_an_id_that_cannot_be_a_subject_token_is_refused(bad: str) -> None:
    with pytest.raises(BadName):
        subjects.public_events(bad)
    with pytest.raises(BadName):
        subjects.turn_notice(bad)


def test_every_bucket_has_its_own_name_and_stream() -> None:
    buckets = [subjects.RELAY_BUCKET, subjects.DEAD_LETTER_BUCKET, subjects.LEASE_BUCKET, subjects.LOBBY_BUCKET]
    assert len(set(buckets)) == len(buckets)
    assert subjects.bucket_stream(subjects.LEASE_BUCKET) == "KV_studroom_leases"


def test_the_jetstream_api_subjects() -> None:
    assert matches(subjects.JETSTREAM, subjects.stream_api("PURGE", subjects.TIMER_STREAM))
    assert matches(subjects.CONSUMER_INFO, "$JS.API.CONSUMER.INFO.STUDROOM_PUBLIC.studroom_timer")
    assert not matches(subjects.CONSUMER_INFO, subjects.consumer_next("STUDROOM_PUBLIC", "studroom_timer"))
