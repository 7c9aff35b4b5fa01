#!/bin/sh
# The origin service: a route to the players' network through the router (replies must cross the
# shaped link too), then `trickle serve`, configured by the TRICKLE_* environment.
#
# With RUN_AS (the compose file's "trickle"), the privilege split of the systemd unit: as root, and
# only here, `trickle native setup` loads the BPF clamp, attaches it to this container's own cgroup
# and pins its maps for RUN_AS; then the origin runs as RUN_AS with no capabilities at all (empty
# bounding set, no_new_privs), against the pinned maps. If the setup fails (a host without BPF
# sock_ops or cgroup v2), the origin says why and serves with its fallback clamp.
set -eu
if [ -n "${ROUTE_VIA:-}" ]; then
  ip route replace "${ACCESS_SUBNET:?ACCESS_SUBNET names the players network}" via "$ROUTE_VIA"
fi
if [ -z "${RUN_AS:-}" ] || [ "$(id -u)" -ne 0 ]; then
  exec trickle serve
fi

pin_dir=/run/trickle/bpf
cgroup_root=/run/trickle/cgroup2
# This container's cgroup in the unified hierarchy: /docker/<id> on a cgroup v1 host (the host's
# cgroup namespace), / with a private cgroup namespace (cgroup v2 hosts).
own_cgroup=$(sed -n 's/^0:://p' /proc/self/cgroup)
if mkdir -p "$cgroup_root" && { mountpoint -q "$cgroup_root" || mount -t cgroup2 none "$cgroup_root"; } \
  && trickle native setup --cgroup "$cgroup_root${own_cgroup%/}" --pin "$pin_dir" --user "$RUN_AS" --no-share-cgroup; then
  export TRICKLE_DELIVERY__CLAMP__CGROUP="$cgroup_root${own_cgroup%/}"
  export TRICKLE_DELIVERY__CLAMP__PIN_DIR="$pin_dir"
else
  echo "origin: the BPF clamp could not be set up here (above); serving with the fallback clamp" >&2
fi
exec setpriv --reuid="$RUN_AS" --regid="$RUN_AS" --init-groups --inh-caps=-all --bounding-set=-all --no-new-privs \
  env HOME=/tmp trickle serve
