#!/usr/bin/env bash
# Install (Debian packages), start PostgreSQL, create the test role and database, and
# export SMALL_TEST_POSTGRES_URL for the PostgreSQL test suite of small-store.
#
# Works on a fresh Debian machine as root. Safe to run again (every step is idempotent).
# Use it either way:
#   source ci/postgres.sh      # exports SMALL_TEST_POSTGRES_URL into the calling shell
#   bash ci/postgres.sh        # prints `export SMALL_TEST_POSTGRES_URL=...` on its last line
#
# Settings (environment, all optional):
#   SMALL_PG_USER (default small), SMALL_PG_PASSWORD (default small),
#   SMALL_PG_DB (default small_test)

# Some images ship the cluster's files (owned by a uid such as 101) without the `postgres`
# account that owns them; pg_ctlcluster then refuses to start ("owned by user id 101 which does
# not exist"). Create the account with the owner's uid, or hand the files to a new account when
# that uid belongs to someone else.
small_pg_account() {
    id postgres >/dev/null 2>&1 && return 0
    echo "postgres.sh: creating the missing postgres account" >&2
    local uid="" gid=""
    for d in /var/lib/postgresql /etc/postgresql /var/run/postgresql; do
        if [ -e "$d" ]; then uid="$(stat -c %u "$d")"; gid="$(stat -c %g "$d")"; break; fi
    done
    if ! getent group postgres >/dev/null 2>&1; then
        if [ -n "$gid" ] && [ "$gid" != 0 ] && ! getent group "$gid" >/dev/null 2>&1; then
            groupadd --system --gid "$gid" postgres || return 1
        else
            groupadd --system postgres || return 1
        fi
    fi
    if [ -n "$uid" ] && [ "$uid" != 0 ] && ! getent passwd "$uid" >/dev/null 2>&1; then
        useradd --system --uid "$uid" --gid postgres --home-dir /var/lib/postgresql \
            --shell /bin/bash postgres || return 1
    else
        useradd --system --gid postgres --home-dir /var/lib/postgresql --shell /bin/bash \
            postgres || return 1
        for d in /var/lib/postgresql /etc/postgresql /var/run/postgresql /var/log/postgresql; do
            if [ -e "$d" ]; then chown -R postgres:postgres "$d"; fi
        done
    fi
    # The server reads its TLS key through the ssl-cert group where the image has one.
    if getent group ssl-cert >/dev/null 2>&1; then usermod -aG ssl-cert postgres; fi
    return 0
}

small_pg_setup() {
    local user="${SMALL_PG_USER:-small}"
    local password="${SMALL_PG_PASSWORD:-small}"
    local db="${SMALL_PG_DB:-small_test}"

    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        echo "postgres.sh: installing PostgreSQL from the Debian packages" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 || return 1
        apt-get install -y -qq postgresql >&2 || return 1
    fi

    local version
    version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
    if [ -z "$version" ]; then
        echo "postgres.sh: no PostgreSQL installation found under /usr/lib/postgresql" >&2
        return 1
    fi

    small_pg_account || return 1

    # The Debian package normally creates the cluster `main`; create it when it does not exist
    # (for example in images where the post-install step was skipped).
    if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -qx "$version main"; then
        pg_createcluster "$version" main >&2 || return 1
    fi
    if ! pg_lsclusters -h | awk -v v="$version" '$1==v && $2=="main" {print $4}' | grep -qx online; then
        pg_ctlcluster "$version" main start >&2 || return 1
    fi

    local port
    port="$(pg_lsclusters -h | awk -v v="$version" '$1==v && $2=="main" {print $3}')"
    port="${port:-5432}"

    local tries=0
    until pg_isready -q -h 127.0.0.1 -p "$port"; do
        tries=$((tries + 1))
        if [ "$tries" -gt 60 ]; then
            echo "postgres.sh: PostgreSQL did not become ready on port $port" >&2
            return 1
        fi
        sleep 0.5
    done

    # Role and database (idempotent).
    su postgres -c "psql -q -v ON_ERROR_STOP=1 -p $port" >&2 <<SQL || return 1
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$user') THEN
    CREATE ROLE "$user" LOGIN PASSWORD '$password';
  ELSE
    ALTER ROLE "$user" LOGIN PASSWORD '$password';
  END IF;
END
\$\$;
SQL
    if ! su postgres -c "psql -tA -p $port -c \"SELECT 1 FROM pg_database WHERE datname = '$db'\"" | grep -qx 1; then
        su postgres -c "createdb -p $port -O '$user' '$db'" >&2 || return 1
    fi

    export SMALL_TEST_POSTGRES_URL="postgres://$user:$password@127.0.0.1:$port/$db"
    echo "export SMALL_TEST_POSTGRES_URL=$SMALL_TEST_POSTGRES_URL"
}

small_pg_setup
