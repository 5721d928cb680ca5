#!/usr/bin/env bash
# What `make study` needs beyond Python packages:
#   lld       links every timing job's own copies of the builds (randomized code and data layout,
#             src/pqsimd/layout.py)
#   valgrind  counts instructions and the instruction mix (the standard preset's "why"; without it the
#             study is timed only and says how to add the counts later)
# Installed when this runs as root on Debian or Ubuntu; otherwise one line saying what to install.
set -u
need=()
if ! command -v ld.lld >/dev/null && ! ls /usr/bin/ld.lld-* >/dev/null 2>&1; then
  need+=(lld-16)
fi
if ! command -v valgrind >/dev/null; then
  need+=(valgrind)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make study: installing ${need[*]} (apt-get): the linker of the randomized layouts, the instruction counter" >&2
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >/dev/null ||
    echo "make study: apt-get could not install ${need[*]}; install them (without lld: --layout fixed)" >&2
else
  echo "make study: install ${need[*]} (sudo apt-get install ${need[*]}); without lld use --layout fixed," \
       "without valgrind the study is timed only" >&2
fi
exit 0
