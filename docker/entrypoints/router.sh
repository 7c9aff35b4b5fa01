#!/bin/sh
# The router service: forwards between the edge (origin) and access (players) networks and shapes
# both directions with the lab's link backends (`trickle router`). The interfaces are found by
# the networks' subnets, unless named (the lab test names its own).
set -eu
interface_on() {
  ip -o -4 addr show to "$1" | awk '{ print $2; exit }'
}
origin_side=${ROUTER_ORIGIN_SIDE:-$(interface_on "${EDGE_SUBNET:?EDGE_SUBNET names the origin network}")}
access_side=${ROUTER_ACCESS_SIDE:-$(interface_on "${ACCESS_SUBNET:?ACCESS_SUBNET names the players network}")}
if [ -z "$origin_side" ] || [ -z "$access_side" ]; then
  echo "router: no interface on ${EDGE_SUBNET:-?} or ${ACCESS_SUBNET:-?}" >&2
  exit 1
fi
set -- --origin-side "$origin_side" --access-side "$access_side" --forwarding "${ROUTER_FORWARDING:-routed}" --backend "${LINK_BACKEND:-auto}"
if [ -n "${LINK_TRACE:-}" ]; then set -- "$@" --trace "$LINK_TRACE"; fi
if [ -n "${LINK_RATE:-}" ]; then
  set -- "$@" --rate "$LINK_RATE" --rtt "${LINK_RTT:?LINK_RTT goes with LINK_RATE}"
  if [ -n "${LINK_UP_RATE:-}" ]; then set -- "$@" --up-rate "$LINK_UP_RATE"; fi
  if [ -n "${LINK_BUFFER_BDP:-}" ]; then set -- "$@" --buffer-bdp "$LINK_BUFFER_BDP"; fi
else
  set -- "$@" --profile "${LINK_PROFILE:-dsl-6mbit}"
fi
exec trickle router "$@"
