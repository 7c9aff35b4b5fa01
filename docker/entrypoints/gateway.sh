#!/bin/sh
# The gateway service: the host's browser reaches the origin (and its /player/ page) through a
# published port on this access-side host, whose connections to the origin cross the router like a
# player's, so the page plays across the shaped link.
set -eu
if [ -n "${ROUTE_VIA:-}" ]; then
  ip route replace "${EDGE_SUBNET:?EDGE_SUBNET names the origin network}" via "$ROUTE_VIA"
fi
exec socat "TCP-LISTEN:${LISTEN_PORT:-8080},fork,reuseaddr" "TCP:${ORIGIN_HOST:?ORIGIN_HOST is the origin address}:${ORIGIN_PORT:-8080}"
