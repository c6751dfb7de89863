#!/usr/bin/env bash
# A Docker daemon that answers, for `make image` and `make image-test`.
#
# Where `docker info` already works, nothing is done. Otherwise, as root on a Debian-like host,
# Debian's docker.io is installed (it brings dockerd, containerd, runc and iptables) and, when no
# daemon runs, dockerd is started in the background with its log in .tools/dockerd.log and its
# pid in .tools/dockerd.pid; `install-docker.sh stop` (`make docker-stop`) stops that one, and
# only that one. The storage
# driver is dockerd's own choice: overlay2 where the filesystem allows it, vfs otherwise.
# Elsewhere (not root, no apt-get) the script says what is missing and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
pidfile=.tools/dockerd.pid

if [ "${1:-}" = stop ]; then
  pid=$(cat "$pidfile" 2>/dev/null || true)
  # the pid is ours only while it is still a dockerd (a pid can be reused)
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    echo "install-docker: stopped the dockerd started by make docker"
  fi
  rm -f "$pidfile"
  exit 0
fi
if docker info >/dev/null 2>&1; then
  exit 0
fi
as_root() { [ "$(id -u)" = 0 ]; }
if ! command -v dockerd >/dev/null; then
  if ! as_root || ! command -v apt-get >/dev/null; then
    echo "install-docker: no Docker daemon answers and docker.io cannot be installed here" \
      "(needs root and apt-get); install Docker and start it, then run this again" >&2
    exit 1
  fi
  echo "install-docker: installing Debian's docker.io"
  install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >/dev/null; }
  install || { apt-get update >/dev/null && install; }
fi
if ! as_root; then
  echo "install-docker: dockerd is installed but not running; start it (as root) and run this again" >&2
  exit 1
fi
mkdir -p .tools
log=.tools/dockerd.log
echo "install-docker: starting dockerd (log: $log)"
# setsid: the daemon outlives this script and the make that ran it, in a session of its own.
setsid dockerd >"$log" 2>&1 </dev/null &
echo $! >"$pidfile"
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "install-docker: dockerd is up ($(docker info --format '{{.ServerVersion}}, storage driver {{.Driver}}'))"
    exit 0
  fi
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    break
  fi
  sleep 0.5
done
echo "install-docker: dockerd did not answer within 30 s; the end of $log:" >&2
tail -n 20 "$log" >&2
exit 1
