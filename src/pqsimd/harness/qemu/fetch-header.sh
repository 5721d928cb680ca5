#!/usr/bin/env bash
# Prints the path of qemu-plugin.h (QEMU's TCG plugin API) matching the installed qemu-user,
# fetching it first if needed. No Debian binary package ships the header, so it comes from the
# Debian *source* package of the very qemu-user version installed (`apt-get source`), and only
# that one file is kept:
#     ${PQSIMD_CACHE:-~/.cache/pqsimd}/qemu-src/<source version, : as _>/qemu-plugin.h
# A second run finds it there and does nothing else. Needs no root and leaves the system's apt
# configuration alone: apt runs with a private configuration (under the cache) whose sources are
# deb-src twins of the configured deb entries (same URIs, suites, components and Signed-By key),
# so the download is checked against the archive's signed Sources index as usual.
# PQSIMD_QEMU_PLUGIN_HEADER=/path/to/qemu-plugin.h skips all this (a QEMU not from Debian).
# --cached: only look (pqsimd's build asks this way; it never downloads behind the user's back).
# Exit 0 with the path on stdout, or 1 with one line on stderr saying what to do.
set -euo pipefail

die() { echo "qemu-plugin header: $*" >&2; exit 1; }

if [ -n "${PQSIMD_QEMU_PLUGIN_HEADER:-}" ]; then
  [ -f "$PQSIMD_QEMU_PLUGIN_HEADER" ] || die "PQSIMD_QEMU_PLUGIN_HEADER=$PQSIMD_QEMU_PLUGIN_HEADER is not a file"
  echo "$PQSIMD_QEMU_PLUGIN_HEADER"; exit 0
fi

command -v dpkg-query >/dev/null || die "not a Debian/Ubuntu system: set PQSIMD_QEMU_PLUGIN_HEADER to include/qemu/qemu-plugin.h of the QEMU source matching \`qemu-aarch64 --version\`"
src_version=""
for pkg in qemu-user qemu-user-static; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    src_version=$(dpkg-query -W -f='${source:Version}' "$pkg"); break
  fi
done
[ -n "$src_version" ] || die "qemu-user is not installed (apt-get install qemu-user), or set PQSIMD_QEMU_PLUGIN_HEADER"

[ -n "${PQSIMD_CACHE:-}${HOME:-}" ] || die "neither PQSIMD_CACHE nor HOME is set: set PQSIMD_CACHE to a writable directory"
base="${PQSIMD_CACHE:-$HOME/.cache/pqsimd}/qemu-src"
dir="$base/${src_version//:/_}"  # no epoch colon in a path that may reach -I or CPATH
final="$dir/qemu-plugin.h"
[ -f "$final" ] && { echo "$final"; exit 0; }
[ "${1:-}" = "--cached" ] && die "QEMU's plugin API header for qemu-user $src_version is not fetched yet: run \`bash $0\` (downloads that Debian source package once, keeps one header in $dir)"

mkdir -p "$base" || die "cannot create $base: set PQSIMD_CACHE to a writable directory"
exec 9>"$base/.lock"
flock 9  # one fetch at a time (test setup and a study may both ask)
[ -f "$final" ] && { echo "$final"; exit 0; }
command -v apt-get >/dev/null || die "apt-get not found: set PQSIMD_QEMU_PLUGIN_HEADER"

work=$(mktemp -d "$base/.work-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/sources" "$work/dl"

# deb-src twins of every configured deb entry, one-line (sources.list, *.list) and deb822 (*.sources).
shopt -s nullglob
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
done > "$work/sources/twins.list"
for f in /etc/apt/sources.list.d/*.sources; do
  awk 'BEGIN { RS = ""; ORS = "\n\n" }
       { n = split($0, l, "\n"); out = ""; keep = 0
         for (i = 1; i <= n; i++) {
           if (l[i] ~ /^Types:/) { if (l[i] ~ /[: ]deb( |$)/) keep = 1; l[i] = "Types: deb-src" }
           out = out l[i] "\n"
         }
         if (keep) printf "%s\n", out }' "$f"
done > "$work/sources/twins.sources"
[ -s "$work/sources/twins.list" ] || rm "$work/sources/twins.list"
[ -s "$work/sources/twins.sources" ] || rm "$work/sources/twins.sources"
ls "$work/sources" | grep -q . || die "no deb entry in /etc/apt/sources.list{,.d} to take a deb-src twin of"

apt_private=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work/sources"
             -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
# A third-party entry without source indexes makes `update` complain; `source` below decides.
apt-get -q "${apt_private[@]}" update > "$work/update.log" 2>&1 || true
if ! (cd "$work/dl" && apt-get -q "${apt_private[@]}" source --download-only "qemu=$src_version") > "$work/source.log" 2>&1; then
  why=$(grep -E '^(E|W):' "$work/source.log" "$work/update.log" | head -1 | cut -d: -f2- || true)
  die "apt-get source qemu=$src_version failed (${why# }); see that the archive of your qemu-user still has this version, or set PQSIMD_QEMU_PLUGIN_HEADER"
fi

cd "$work/dl"
dsc=$(ls ./*.dsc | head -1)
orig=$(ls ./*.orig.tar.* | head -1)
debian=$(ls ./*.debian.tar.* 2>/dev/null | head -1 || true)
patched=0
if [ -n "$debian" ]; then
  mkdir deb && tar -xf "$debian" -C deb
  grep -rqs 'include/qemu/qemu-plugin.h' deb/debian/patches && patched=1
fi
if [ "$patched" = 0 ]; then
  # Only this one file of the upstream tarball: Debian's patches leave it as it is.
  tar -xf "$orig" --wildcards '*/include/qemu/qemu-plugin.h'
else
  command -v dpkg-source >/dev/null || die "Debian patches change the header, and applying them needs dpkg-source: apt-get install dpkg-dev"
  dpkg-source --no-check -x "$dsc" tree > "$work/unpack.log" 2>&1 || die "dpkg-source -x $dsc failed (see apt-get source qemu)"
fi
found=$(find . -path '*/include/qemu/qemu-plugin.h' | head -1)
[ -n "$found" ] || die "$orig has no include/qemu/qemu-plugin.h"
grep -q 'QEMU_PLUGIN_VERSION' "$found" || die "$found does not look like the plugin API header"

mkdir -p "$dir"
{ echo "from: $(basename "$dsc") (apt-get source qemu=$src_version), $(basename "$orig") sha256 $(sha256sum "$orig" | cut -d' ' -f1)"
  echo "debian patches touch it: $([ "$patched" = 1 ] && echo yes || echo no)"; } > "$dir/SOURCE"
cp "$found" "$final.tmp.$$" && mv "$final.tmp.$$" "$final"
echo "$final"
