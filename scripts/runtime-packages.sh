#!/usr/bin/env bash
# Prints the Debian packages an installed featstore needs at run time, one per
# line, sorted: the owners (dpkg -S) of every shared library that ldd finds for
# the ELF files under PREFIX/bin and PREFIX/lib. The Docker runtime stage
# installs exactly this list (docker/Dockerfile), so it follows the build
# instead of a hand-kept list that falls behind it.
#   scripts/runtime-packages.sh /opt/featstore > runtime-packages.txt
# Libraries inside PREFIX itself, the dynamic loader and the vDSO are left out
# (the loader comes with libc6, which libc.so.6 names anyway). A library that
# ldd cannot find or that no package owns is an error: the image would lack it.
set -euo pipefail

die() { echo "runtime-packages: $*" >&2; exit 1; }

[ $# -eq 1 ] && [ -d "$1" ] || die "usage: $0 INSTALL_PREFIX"
PREFIX=$(realpath "$1")

# The ELF files of the install (executables and shared objects; static
# archives, headers and pkg-config files are skipped by their magic).
elf_files() {
  local dirs=() d
  for d in "$PREFIX/bin" "$PREFIX/lib"; do [ -d "$d" ] && dirs+=("$d"); done
  [ ${#dirs[@]} -gt 0 ] || return 0
  find "${dirs[@]}" -type f | while read -r f; do
    if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then echo "$f"; fi
  done
}

# The resolved paths ldd prints for one file ("name => /path (addr)"). The
# loader's own line has no "=>" and the vDSO resolves to no path: both drop
# out here. LD_LIBRARY_PATH lets the install's own libraries resolve (to be
# skipped below) whatever RUNPATH the build gave them.
deps_of() {
  local out
  if ! out=$(LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$1" 2>&1); then
    case "$out" in *"not a dynamic executable"*) return 0 ;; esac # static: needs nothing
    die "ldd $1 failed: $out"
  fi
  if grep -q 'not found' <<<"$out"; then
    die "$1 needs a library ldd cannot find: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ' | sed 's/^ //')"
  fi
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$out"
}

# The other spelling of a path under merged /usr (/lib/x <-> /usr/lib/x, the
# same for bin, sbin, lib64): dpkg records the path the package ships, which
# may be either, while ldd prints the one the loader's search reached.
other_spelling() {
  case "$1" in
    /usr/lib/* | /usr/lib64/* | /usr/bin/* | /usr/sbin/*) echo "${1#/usr}" ;;
    /lib/* | /lib64/* | /bin/* | /sbin/*) echo "/usr$1" ;;
  esac
}

# Every spelling of a library path dpkg may have recorded: as ldd printed it,
# then its realpath (the versioned file a .so.N link names), each both ways.
spellings() {
  local real
  real=$(realpath "$1")
  printf '%s\n' "$1" "$(other_spelling "$1")" "$real" "$(other_spelling "$real")" | grep -v '^$'
}

# The owners of the libraries named on stdin, one package per line. One
# dpkg -S for all spellings (each call reads the whole database), then per
# library the first spelling found; "pkg:arch, pkg2:arch: /path" lines are
# split, diversion notes (no ": /") ignored.
owners() {
  local -A owner=()
  local lib cand found line pkgs path
  local -a libs all=()
  mapfile -t libs
  for lib in "${libs[@]}"; do mapfile -t -O "${#all[@]}" all < <(spellings "$lib"); done
  while IFS= read -r line; do
    case "$line" in *": /"*) ;; *) continue ;; esac
    pkgs=${line%%: /*} path=/${line#*: /}
    owner[$path]=$(tr ',' '\n' <<<"$pkgs" | sed 's/^ *//; s/:.*$//')
  done < <(dpkg -S "${all[@]}" 2>/dev/null || true)
  for lib in "${libs[@]}"; do
    found=""
    while read -r cand; do
      if [ -n "${owner[$cand]:-}" ]; then found=${owner[$cand]}; break; fi
    done < <(spellings "$lib")
    [ -n "$found" ] || die "no Debian package owns $lib (realpath $(realpath "$lib"))"
    echo "$found"
  done
}

main() {
  local files libs lib
  files=$(elf_files)
  [ -n "$files" ] || die "no ELF files under $PREFIX/bin or $PREFIX/lib (is it an install prefix?)"
  libs=$(while read -r f; do deps_of "$f"; done <<<"$files" | sort -u)
  while read -r lib; do
    [ -n "$lib" ] || continue
    case "$(realpath "$lib")" in "$PREFIX"/*) continue ;; esac # ours: copied with the install
    echo "$lib"
  done <<<"$libs" | owners | sort -u
}

main
