-- Creates the `meshwork` login role and the `meshwork` database it owns, with nothing more.
-- Run once per PostgreSQL server (13 or newer) as a superuser; it is safe to run again (it then
-- re-applies the role's attributes and sets the password given):
--
--   psql -v ON_ERROR_STOP=1 -v meshwork_password="$MESHWORK_DB_PASSWORD" -f init.sql postgres
--
-- Then: DATABASE_URL=postgres://meshwork:<password>@<host>:5432/meshwork
--
-- Why the role owns its database and schema: Meshwork applies its own migrations when a service
-- starts (MikroORM, on the same DATABASE_URL), so the role it connects as must be able to create
-- and alter its tables. It gets no rights outside its database: no SUPERUSER, CREATEDB,
-- CREATEROLE, REPLICATION or BYPASSRLS. (A split into a DDL role and a DML-only runtime role
-- would need a separate migration step, which Meshwork does not have today.)

\set ON_ERROR_STOP on

\if :{?meshwork_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'psql variable meshwork_password is not set: psql -v meshwork_password=... -f init.sql postgres'; END $$;
\endif

-- Store a SCRAM verifier, never an MD5 hash, whatever the server's default.
SET password_encryption = 'scram-sha-256';

-- psql's \gexec runs the generated statement only when the row exists: CREATE ROLE and
-- CREATE DATABASE have no IF NOT EXISTS, and CREATE DATABASE cannot run inside a DO block.
SELECT 'CREATE ROLE meshwork LOGIN'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'meshwork') \gexec

-- Applied every run, so a re-run also repairs attributes someone loosened.
-- CONNECTION LIMIT: Database:PoolSize (default 10) per Meshwork process that hosts services,
-- plus room for a rolling upgrade (old and new pods at once) and an operator's psql.
ALTER ROLE meshwork WITH LOGIN PASSWORD :'meshwork_password'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT
  CONNECTION LIMIT 100;

-- template0 and UTF8: a clean database whose encoding does not depend on the server's locale.
SELECT 'CREATE DATABASE meshwork OWNER meshwork ENCODING ''UTF8'' TEMPLATE template0'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'meshwork') \gexec

-- Other roles of this server cannot connect or create temporary tables here. The owner keeps
-- its rights (an owner's privileges do not come from PUBLIC).
REVOKE ALL ON DATABASE meshwork FROM PUBLIC;

\connect meshwork

-- MikroORM creates its tables (and its mikro_orm_migrations bookkeeping table) in `public`.
-- Owning the schema lets the role create there; revoking PUBLIC's rights closes the default
-- CREATE that PostgreSQL 14 and older grant every role on `public`.
ALTER SCHEMA public OWNER TO meshwork;
REVOKE ALL ON SCHEMA public FROM PUBLIC;

-- A safety net for this role in this database only: a transaction left open by a stuck
-- request releases its locks after a minute. Deliberately no statement_timeout or lock_timeout
-- here: a migration may build an index for minutes, and a process starting while another one
-- migrates waits on the migration lock for as long as that takes. Set a lock_timeout inside a
-- migration (SET LOCAL lock_timeout = '5s') when its DDL could queue behind live traffic.
ALTER ROLE meshwork IN DATABASE meshwork SET idle_in_transaction_session_timeout = '60s';
