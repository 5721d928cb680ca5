#!/usr/bin/env bash
# What `make study` needs beyond Python packages: lld, which links every timing job's own copies of
# the builds (randomized code and data layout, src/pqsimd/layout.py). Installed when this runs as
# root on Debian or Ubuntu; otherwise one line saying what to install (or use --layout fixed).
set -u
if ! command -v ld.lld >/dev/null && ! ls /usr/bin/ld.lld-* >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "make study: installing lld-16 (apt-get), the linker of the randomized layouts" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends lld-16; } >/dev/null ||
      echo "make study: apt-get could not install lld-16; install it, or run with --layout fixed" >&2
  else
    echo "make study: randomized layouts need lld (sudo apt-get install lld-16), or run with --layout fixed" >&2
  fi
fi
exit 0
