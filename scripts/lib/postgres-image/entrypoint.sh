#!/bin/sh
# Makes the cluster on first start (the user, password and database from the environment),
# then runs the server in the foreground, as the official image does.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-host=scram-sha-256 \
    --auth-local=trust -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  printf "host all all all scram-sha-256\n" >>"$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    postgres --single -D "$PGDATA" -c listen_addresses='' postgres >/dev/null <<SQL
CREATE DATABASE "$POSTGRES_DB" OWNER "$POSTGRES_USER";
SQL
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
