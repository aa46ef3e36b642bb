-- Studroom: the role, the database and the schemas (as a superuser; safe to run again).
--
--   psql -X -v ON_ERROR_STOP=1 -v password='the role password' -v stores=2 -f deploy/postgres/init.sql
--
-- password (required): the role studroom's password, set again at every run (how to
--   change it); the same as in STUDROOM_DATABASE_URL (deploy/studroom.env).
-- stores (default 2): the event stores studroom_p0 .. studroom_p<stores-1>, as the
--   services' --stores (STUDROOM_STORES). Run again with a larger number to add stores.
-- Only what is missing is created; nothing is dropped. The services create their
-- tables inside the schemas on first start.
\set ON_ERROR_STOP on

\if :{?password}
\else
DO $$ BEGIN RAISE EXCEPTION 'give the role''s password: psql -v password=''...'' -f init.sql'; END $$;
\endif
\if :{?stores}
\else
\set stores 2
\endif

SELECT 'CREATE ROLE studroom'
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'studroom')\gexec
ALTER ROLE studroom WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';

SELECT 'CREATE DATABASE studroom OWNER studroom ENCODING ''UTF8'' TEMPLATE template0'
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'studroom')\gexec

\connect studroom
-- One schema per event store (a partition of the tables), then the cashier's store,
-- the hand histories and the ledger's books.
SELECT format('CREATE SCHEMA IF NOT EXISTS %I AUTHORIZATION studroom', 'studroom_p' || n)
  FROM generate_series(0, :stores - 1) AS n\gexec
CREATE SCHEMA IF NOT EXISTS studroom_cashier AUTHORIZATION studroom;
CREATE SCHEMA IF NOT EXISTS studroom_history AUTHORIZATION studroom;
CREATE SCHEMA IF NOT EXISTS studroom_ledger AUTHORIZATION studroom;
