-- Studroom: database, role and event-store schemas (run once, as a superuser).
--   psql -v password="'...'" -f deploy/postgres/init.sql
CREATE ROLE studroom LOGIN PASSWORD :password;
CREATE DATABASE studroom OWNER studroom;
\connect studroom
-- One schema per event store (partition of tables); the services create their tables
-- inside them on first start.  Add studroom_p2.. when running with --stores 3..
CREATE SCHEMA IF NOT EXISTS studroom_p0 AUTHORIZATION studroom;
CREATE SCHEMA IF NOT EXISTS studroom_p1 AUTHORIZATION studroom;
