#!/usr/bin/env bash
# Makes sure everything Deskhand needs on this machine is there: npm dependencies, the SDK's
# build (sdk/dist), a running PostgreSQL and Redis (started, or installed with apt-get when
# absent), and, with --test, the Debian Chromium that browser tests drive. Safe to run again: it
# only acts on what is missing. `npm start` and `npm test` run it first; the database itself is created by `deskhand migrate`.
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
want_desktop_bench=0
[ "${1:-}" = "--test" ] && want_browser=1
# `npm run bench -- linux-desktop` runs this with --linux-desktop-bench when a tool it needs is
# missing: the test desktop (as --test installs it) and the peers' tools (linux_desktop_bench_tools).
[ "${1:-}" = "--linux-desktop-bench" ] && want_browser=1 && want_desktop_bench=1

log() { printf '[setup] %s\n' "$*" >&2; }

apt_updated=0
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    log "need to install $* but not running as root; install it yourself and retry"; exit 1
  fi
  if [ $apt_updated = 0 ]; then
    log "apt-get update"; DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2; apt_updated=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

# host:port of a URL such as postgres://user@host:5432/db or redis://host:6379/0
url_host() { sed -E 's#^[a-z]+://([^@/]*@)?([^:/?]+).*#\2#' <<<"$1"; }
url_port() { local p; p=$(sed -nE 's#^[a-z]+://([^@/]*@)?[^:/?]+:([0-9]+).*#\2#p' <<<"$1"); echo "${p:-$2}"; }
is_local() { case "$1" in localhost|127.*|::1) return 0;; *) return 1;; esac; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_port() { for _ in $(seq 1 60); do port_open "$1" "$2" && return 0; sleep 0.5; done; return 1; }

# --- npm dependencies -------------------------------------------------------------------------
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm dependencies"
  # `npm install` with the committed lock installs the locked versions. (`npm ci` of npm 11 here
  # refuses a lock without the other platforms' optional packages, which this npm itself writes.)
  npm install --no-audit --no-fund >&2
fi

# --- the SDK (sdk/) ---------------------------------------------------------------------------
# Built to sdk/dist (not committed) when absent or older than any of its sources.
if [ ! -f sdk/dist/index.js ] || [ -n "$(find sdk/src sdk/package.json sdk/tsconfig.json -newer sdk/dist/index.js -print -quit)" ]; then
  log "building the SDK (sdk/dist)"
  rm -rf sdk/dist
  node_modules/.bin/tsc -p sdk/tsconfig.json >&2
fi

# --- PostgreSQL -------------------------------------------------------------------------------
# PostgreSQL itself: DATABASE_MIGRATION_URL when DATABASE_URL is a pooler (DESKHAND_DATABASE_POOLER).
db_url="${DATABASE_MIGRATION_URL:-${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/deskhand}}"
db_host=$(url_host "$db_url"); db_port=$(url_port "$db_url" 5432)
if is_local "$db_host" && ! port_open 127.0.0.1 "$db_port"; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    apt_install postgresql
    # Our own fresh install: let local TCP connections in without a password, as on the
    # development machines (trust on loopback only).
    for hba in /etc/postgresql/*/main/pg_hba.conf; do
      sed -i -E 's#^(host\s+all\s+all\s+(127\.0\.0\.1/32|::1/128)\s+)\S+#\1trust#' "$hba"
    done
  fi
  for v in $(ls /etc/postgresql); do
    log "starting PostgreSQL $v"
    pg_ctlcluster --skip-systemctl-redirect "$v" main start >&2 || true
  done
  wait_port 127.0.0.1 "$db_port" || { log "PostgreSQL did not come up on port $db_port"; exit 1; }
fi

# --- Redis ------------------------------------------------------------------------------------
redis_url="${REDIS_URL:-redis://127.0.0.1:6379}"
redis_host=$(url_host "$redis_url"); redis_port=$(url_port "$redis_url" 6379)
# Not with a Redis Cluster (DESKHAND_REDIS_CLUSTER_NODES): REDIS_URL is not used then.
if [ -z "${DESKHAND_REDIS_CLUSTER_NODES:-}" ] && is_local "$redis_host" && ! port_open 127.0.0.1 "$redis_port"; then
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  log "starting Redis on port $redis_port"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$redis_port" --save "" \
    --appendonly no --dir /var/lib/redis --logfile /var/log/redis/deskhand.log >&2
  wait_port 127.0.0.1 "$redis_port" || { log "Redis did not come up on port $redis_port"; exit 1; }
fi

# --- Chromium for browser tests ---------------------------------------------------------------
if [ $want_browser = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium
fi
# Debian's PgBouncer and redis-server for the scale-out tests (test/integration/scale-out), which
# start their own from them: a Redis Cluster, and a PgBouncer in transaction mode.
if [ "${1:-}" = "--test" ] && ! { [ -x /usr/sbin/pgbouncer ] && command -v redis-server && command -v redis-cli; } >/dev/null 2>&1; then
  apt_install pgbouncer redis-server
fi
# A real X desktop for the Linux desktop tests (test/integration/linux-desktop): Xvfb, openbox,
# the AT-SPI accessibility bus, a D-Bus session bus, and two apps besides Chromium.
if [ $want_browser = 1 ] && ! { command -v Xvfb && command -v openbox && command -v dbus-daemon && [ -x /usr/libexec/at-spi-bus-launcher ] && command -v dbus-launch && command -v mousepad && command -v xterm; } >/dev/null 2>&1; then
  apt_install xvfb openbox at-spi2-core dbus-x11 mousepad xterm
fi
# Fonts for the simulated computer's screens.
# QEMU and debootstrap for the QEMU runner's tests (test/integration/qemu): they build the debian-12
# image once (cached in ~/.cache/deskhand/images, keyed by its recipe) and run machines under it.
if [ "${1:-}" = "--test" ] && ! { command -v qemu-system-x86_64 && command -v qemu-img && command -v debootstrap; } >/dev/null 2>&1; then
  apt_install qemu-system-x86 qemu-utils debootstrap
fi
if [ ! -d /usr/share/fonts/truetype/dejavu ]; then
  apt_install fonts-dejavu-core
fi

# --- Bench-only tools: `npm run bench -- linux-desktop` --------------------------------------
# The peers' way of doing an act, measured beside LinuxComputer: xdotool for input and scrot for
# the screenshot, each spawned per action (bench/linux-desktop.ts). Nothing else uses them.
linux_desktop_bench_tools() {
  if ! { command -v xdotool && command -v scrot; } >/dev/null 2>&1; then
    apt_install xdotool scrot
  fi
}
if [ $want_desktop_bench = 1 ]; then
  linux_desktop_bench_tools
fi
exit 0
