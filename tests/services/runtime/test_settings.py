"""Settings come from the environment, checked when read."""

from __future__ import annotations

from pathlib import Path

import pytest
from studroom.services.runtime.settings import Settings, log_level_from_env


def test_settings_from_env(tmp_path: Path) -> None:
    assert Settings.from_env({}) == Settings(
        nats_url=None, database_url=None, data_dir=Path.cwd() / ".studroom"
    )
    settings = Settings.from_env(
        {
            "STUDROOM_NATS_URL": "nats://10.0.0.5:4222",
            "STUDROOM_DATABASE_URL": "postgresql://u@db:5433/room",
            "STUDROOM_DATA_DIR": str(tmp_path),
        }
    )
    assert settings.nats_url == "nats://10.0.0.5:4222"
    assert settings.database_url == "postgresql://u@db:5433/room"
    assert settings.data_dir == tmp_path
    assert not settings.embedded_nats and not settings.embedded_postgres


def test_empty_variables_mean_embedded_servers() -> None:
    settings = Settings.from_env({"STUDROOM_NATS_URL": " ", "STUDROOM_DATABASE_URL": ""})
    assert settings.embedded_nats and settings.embedded_postgres


def test_a_nats_cluster_is_several_urls() -> None:
    urls = "nats://10.0.0.5:4222,tls://10.0.0.6:4222"
    assert Settings.from_env({"STUDROOM_NATS_URL": urls}).nats_url == urls


def test_urls_of_the_wrong_kind_are_refused() -> None:
    with pytest.raises(ValueError, match="STUDROOM_DATABASE_URL"):
        Settings.from_env({"STUDROOM_DATABASE_URL": "mysql://x"})
    with pytest.raises(ValueError, match="STUDROOM_NATS_URL"):
        Settings.from_env({"STUDROOM_NATS_URL": "nats://a:4222,http://b"})


def test_a_child_process_reads_the_same_settings(tmp_path: Path) -> None:
    settings = Settings("nats://127.0.0.1:14222", "postgresql://postgres@127.0.0.1:15432/s", tmp_path,
                        nats_creds=tmp_path / "auth" / "creds" / "service.table.creds")
    env = settings.to_env({"PATH": "/bin", "STUDROOM_NATS_URL": "nats://old:4222"})
    assert env["PATH"] == "/bin"
    assert Settings.from_env(env) == settings
    embedded = Settings(data_dir=tmp_path).to_env(env)
    assert not {"STUDROOM_NATS_URL", "STUDROOM_DATABASE_URL", "STUDROOM_NATS_CREDS"} & set(embedded)
    assert Settings.from_env(embedded) == Settings(data_dir=tmp_path)


def test_the_log_level_comes_from_the_environment_or_is_info() -> None:
    assert log_level_from_env({}) == "INFO"
    assert log_level_from_env({"STUDROOM_LOG_LEVEL": "warning "}) == "warning"


def test_the_nats_ca_is_read_checked_and_handed_to_children(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    with pytest.raises(ValueError, match="STUDROOM_NATS_CA: no CA certificate"):
        Settings.from_env({"STUDROOM_NATS_CA": str(ca)})
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    settings = Settings.from_env({"STUDROOM_NATS_CA": str(ca)})
    assert settings.nats_ca == ca
    assert settings.to_env({})["STUDROOM_NATS_CA"] == str(ca)
    assert Settings(data_dir=tmp_path).to_env({"STUDROOM_NATS_CA": str(ca)})["STUDROOM_NATS_CA"] == str(ca)


def test_a_bad_database_url_is_refused_without_showing_its_password() -> None:
    with pytest.raises(ValueError, match="STUDROOM_DATABASE_URL") as refused:
        Settings.from_env({"STUDROOM_DATABASE_URL": "postgres+psycopg://u:hunter2secret@db/room"})
    assert "hunter2secret" not in str(refused.value)
