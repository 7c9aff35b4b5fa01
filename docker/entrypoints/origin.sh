#!/bin/sh
# The origin service: a route to the players' network through the router (replies must cross the
# shaped link too), then `trickle serve`, configured by the TRICKLE_* environment.
set -eu
if [ -n "${ROUTE_VIA:-}" ]; then
  ip route replace "${ACCESS_SUBNET:?ACCESS_SUBNET names the players network}" via "$ROUTE_VIA"
fi
exec trickle serve
