#!/usr/bin/env bash
# What the test suite needs beyond Python packages, installed when this runs as root on a Debian or
# Ubuntu machine; otherwise one line saying what to install. Called by `make test`. Quick (and
# silent) when everything is there.
#   slurm-wlm, munge    a real one-node SLURM cluster for the SLURM executor tests
#   lld-16              the linker of every timing job's randomized layout (src/pqsimd/layout.py)
#   valgrind            exact instruction counts and the instruction mix (callgrind)
#   clang, clang-16, gcc-11   the compiler matrix (a second compiler family, and other versions)
#   llvm-16, llvm-19    llvm-mca, the per-CPU cost model of the mechanism view (19: the Arm cores)
#   chromium            the HTML report loaded in a real browser
#   texlive-*           the report's LaTeX tables and macros.tex compiled with pdflatex
#   binutils            objdump and nm (the mix metric, the exported-symbol check)
#   r-base-core, r-bioc-limma   the limma cross-check of the moderated variances (tests/test_analyze_design.py)
#   qemu-user, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross   aarch64 builds run under emulation (and x86-64
#                       ones traced under qemu-x86_64 for --metric hazards),
#                       counted by our TCG plugin; dpkg-dev: `apt-get source` for the plugin's header
#   gcc-riscv64-linux-gnu, libc6-dev-riscv64-cross, clang-19   riscv64 builds (RVV intrinsics need clang-19)
set -u
PKGS="slurm-wlm munge lld-16 valgrind clang clang-16 gcc-11 llvm-16 llvm-19 chromium texlive-latex-base texlive-latex-recommended binutils r-base-core r-bioc-limma qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross dpkg-dev gcc-riscv64-linux-gnu libc6-dev-riscv64-cross clang-19"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "make test: installing$missing (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
      echo "make test: apt-get could not install$missing; the tests that need them will fail" >&2
  else
    echo "make test: the whole suite needs$missing; install them (sudo apt-get install$missing) or the tests that use them fail" >&2
  fi
fi
# The QEMU plugin API header (no binary package has it): fetched once into the user's cache.
if command -v qemu-aarch64 >/dev/null; then
  "$(dirname "$0")/../src/pqsimd/harness/qemu/fetch-header.sh" >/dev/null ||
    echo "make test: no qemu-plugin.h; the aarch64 counting tests will fail" >&2
fi
exit 0
