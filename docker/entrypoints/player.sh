#!/bin/sh
# The player service: a route to the origin's network through the router, then `trickle e2e`
# (dash.js or hls.js in Chromium, as an unprivileged user) against the origin; the QoE report
# (summary.json, index.html, one JSON per session) goes to $REPORTS/<date>.
set -eu
if [ -n "${ROUTE_VIA:-}" ]; then
  ip route replace "${EDGE_SUBNET:?EDGE_SUBNET names the origin network}" via "$ROUTE_VIA"
fi
origin="http://${ORIGIN_HOST:?ORIGIN_HOST is the origin address}:${ORIGIN_PORT:-8080}"
case "${PLAYER:-dashjs}" in
  hlsjs) manifest=master.m3u8 ;;
  *) manifest=manifest.mpd ;;
esac
curl -sf -o /dev/null --retry 60 --retry-connrefused --retry-delay 1 "$origin/healthz"
out="${REPORTS:-/reports}/$(date -u +%Y%m%dT%H%M%SZ)-${PLAYER:-dashjs}"
run_as=""
if [ "$(id -u)" -eq 0 ] && [ -n "${RUN_AS:-}" ]; then
  mkdir -p "$out" && chown "$RUN_AS" "$out"
  run_as="setpriv --reuid=$RUN_AS --regid=$RUN_AS --init-groups --inh-caps=-all --reset-env"
  # shellcheck disable=SC2086 # run_as is a command prefix, split on purpose
  if ! $run_as test -w "$out"; then
    echo "player: E_REPORTS $RUN_AS cannot write $out: the mounted reports directory must be searchable by others (chmod o+x it on the host)" >&2
    exit 1
  fi
fi
# shellcheck disable=SC2086 # run_as is a command prefix, split on purpose
exec $run_as trickle e2e --url "$origin/media/${ASSET:-demo}/$manifest" --player "${PLAYER:-dashjs}" \
  --sessions "${SESSIONS:-2}" --seconds "${SECONDS_PER_SESSION:-60}" --out "$out"
