#!/usr/bin/env bash
# Builds the image from Containerfile with podman (or docker: ENGINE=docker),
# checks it holds nothing but /tuls, and runs the smoke session (dist/smoke.py)
# through `ENGINE run -i --rm -v HOSTDIR:/work IMAGE filesystem /work`, as the
# image's non-root user (uid 65532), checking the written file on the host.
# Needs dist/out/tuls-x86_64-unknown-linux-musl (dist/build.sh).
#
# In a sandbox without cgroup or rlimit permissions, extra flags go through
# ENGINE_FLAGS (before `run`) and RUN_FLAGS (after it), e.g. the ones this
# project's development machine needs (crun rejects its hybrid cgroup layout,
# and raising RLIMIT_NOFILE/NPROC is not permitted there):
#   ENGINE_FLAGS="--runtime runc" \
#   RUN_FLAGS="--network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024" dist/container-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${ENGINE:-podman}"
image="${IMAGE:-localhost/tuls:smoke}"
read -r -a eflags <<<"${ENGINE_FLAGS:-}"
read -r -a rflags <<<"${RUN_FLAGS:-}"

"$engine" "${eflags[@]}" build -q -t "$image" -f Containerfile . >/dev/null
echo "image: $image, user $("$engine" "${eflags[@]}" image inspect "$image" --format '{{.Config.User}}'), entrypoint $("$engine" "${eflags[@]}" image inspect "$image" --format '{{.Config.Entrypoint}}')"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$engine" "${eflags[@]}" image save "$image" -o "$tmp/image.tar" >/dev/null 2>&1
mkdir "$tmp/img" && tar -xf "$tmp/image.tar" -C "$tmp/img"
files="$(for l in "$tmp"/img/*/layer.tar; do tar -tf "$l"; done | sort -u | tr '\n' ' ')"
echo "image files: $files"
[ "$files" = "tuls " ] || { echo "not ok - the image holds more than /tuls"; exit 1; }
echo "ok - the image holds only /tuls"

mkdir "$tmp/root"
printf 'hello from the fixture\n' > "$tmp/root/hello.txt"
chmod 0777 "$tmp/root" # the image's user (65532) writes here
python3 dist/smoke.py --root /work --host-root "$tmp/root" -- \
    "$engine" "${eflags[@]}" run -i --rm "${rflags[@]}" -v "$tmp/root:/work" "$image"
owner="$(stat -c %u "$tmp/root/written.txt")"
[ "$owner" = 65532 ] && echo "ok - written as uid 65532" || { echo "not ok - written as uid $owner"; exit 1; }
