#!/usr/bin/env bash
# What the test suite needs beyond Python packages, installed when this runs as root on a Debian or
# Ubuntu machine; otherwise one line saying what to install. Called by `make test`.
#   slurm-wlm, munge    a real one-node SLURM cluster for the SLURM executor tests
#   valgrind            exact instruction counts and the instruction mix (callgrind)
#   clang, clang-16, gcc-11   the compiler matrix (a second compiler family, and other versions)
#   llvm-16             llvm-mca, the per-CPU cost model of the mechanism view
#   chromium            the HTML report loaded in a real browser
#   texlive-*           the report's LaTeX tables and macros.tex compiled with pdflatex
#   binutils            objdump and nm (the mix metric, the exported-symbol check)
#   r-base-core, r-bioc-limma   the limma cross-check of the moderated variances (tests/test_analyze_design.py)
set -u
PKGS="slurm-wlm munge valgrind clang clang-16 gcc-11 llvm-16 chromium texlive-latex-base texlive-latex-recommended binutils r-base-core r-bioc-limma"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make test: installing$missing (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $missing >/dev/null || {
    echo "make test: apt-get could not install$missing; the tests that need them will fail" >&2; exit 0; }
else
  echo "make test: the whole suite needs$missing; install them (sudo apt-get install$missing) or the tests that use them fail" >&2
fi
