#!/usr/bin/env bash
# The one set-up step: .venv with the PyPI packages pinned in requirements-dev.lock and requirements-torch.lock, the
# rwth-i6 projects at their pinned commits (RETURNN with its git submodules), i6_rc_jobs installed editable.
# Idempotent: it only does what is missing, so a second run takes seconds.
# ./setup.sh --returnn-range also makes, for each returnn-range/<name>.txt, a Python of its own with that file's
# PyPI pins (.venv-returnn-<name>: the TensorFlow of that RETURNN's time) and RETURNN at the commit it names
# (.deps/src/returnn-<name>): the older RETURNNs the tests train written configs with (./test.sh asks for them);
# they need the system BLAS (Debian's libblas-dev), which it installs as root.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv=$root/.venv
deps=$root/.deps
python=${PYTHON:-python3.11}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

die() {
  echo "setup.sh: $1" >&2
  [ -s "$log" ] && tail -n 20 "$log" >&2
  exit 1
}
say() { echo "setup.sh: $*"; }
changed=0
range=0
case "${1:-}" in
  "") ;;
  --returnn-range) range=1 ;;
  *) die "unknown argument '$1': ./setup.sh [--returnn-range]" ;;
esac

# 0. With --returnn-range, first what the system must have: RETURNN before 2026-01-02 links its NativeLstm2 op for
#    the CPU against the system BLAS (tests/test_returnn_range.py). Root installs it; anyone else is told how.
has_blas() { ldconfig -p | grep '[[:space:]]libblas\.so (' >/dev/null; }
if [ "$range" = 1 ] && ! has_blas; then
  [ "$(id -u)" = 0 ] ||
    die "the older RETURNNs need the system BLAS: run 'sudo apt-get install libblas-dev', then this again"
  say "installing libblas-dev (apt-get)"
  { apt-get install -y -q libblas-dev || { apt-get update -q && apt-get install -y -q libblas-dev; }; } >"$log" 2>&1 ||
    die "apt-get install libblas-dev failed: install the system BLAS, then run ./setup.sh --returnn-range again"
  has_blas || die "libblas.so is still not in ldconfig's cache after installing libblas-dev: run ldconfig"
  changed=1
fi

# A Python 3.11 venv ($1) with exactly the PyPI pins of the requirements file $2; a stamp of the file makes a second
# run skip pip.
make_venv() {
  local venv=$1 requirements=$2
  if [ ! -x "$venv/bin/python" ]; then
    command -v "$python" >/dev/null || die "no $python on PATH: install Python 3.11 or set PYTHON=/path/to/python3.11"
    say "creating $venv"
    "$python" -m venv "$venv" >"$log" 2>&1 || die "'$python -m venv $venv' failed"
    changed=1
  fi
  "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
    die "$venv is not Python 3.11: remove it and run ./setup.sh again"
  install_pins "$venv" "$requirements" requirements
}

# The exact pins of the requirements file $2 in the venv $1; a stamp of the file ($venv/.i6_rc_jobs-$3.sha256) makes
# a second run skip pip. Further arguments go to pip (--no-deps).
install_pins() {
  local venv=$1 requirements=$2 stamp=$1/.i6_rc_jobs-$3.sha256 file want
  shift 3
  file=$(basename "$requirements")
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing $file into $venv (takes a few minutes the first time)"
    "$venv/bin/pip" install --disable-pip-version-check "$@" -r "$requirements" >"$log" 2>&1 ||
      die "pip install -r $file failed: check access to PyPI (pip config list), then run ./setup.sh again"
    echo "$want" >"$stamp"
    changed=1
  fi
}

# A checkout of $2 (a real URL) in $3 at commit $4, which the file $5 pins ($1 names it), of only the folders
# rwth-i6.sparse names for $1 if it names any; one at another commit, with modified tracked files or other folders is
# repaired.
checkout() {
  local name=$1 url=$2 dir=$3 commit=$4 pinned_by=$5 folders
  if ! git -C "$dir" rev-parse --git-dir >/dev/null 2>&1; then
    rm -rf "$dir"
    say "cloning $url"
    git clone -q --no-checkout "$url" "$dir" >"$log" 2>&1 ||
      die "cannot clone $url: check access to github.com (or a git mirror for it), then run ./setup.sh again"
    changed=1
  fi
  folders=$(awk -v name="$name" '$1 == name {print $2}' "$root/rwth-i6.sparse" 2>/dev/null || true)
  if [ -n "$folders" ] && [ "$(git -C "$dir" sparse-checkout list 2>/dev/null | sort)" != "$(sort <<<"$folders")" ]; then
    say "checking out only these folders of $name: $(echo $folders)"
    # shellcheck disable=SC2086
    git -C "$dir" sparse-checkout set --cone $folders >"$log" 2>&1 || die "git sparse-checkout in $dir failed"
    changed=1
  fi
  if [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null)" != "$commit" ] ||
    [ -n "$(git -C "$dir" status --porcelain --untracked-files=no --ignore-submodules=all)" ]; then
    if ! git -C "$dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
      say "fetching $url"
      git -C "$dir" fetch -q origin >"$log" 2>&1 || die "cannot fetch $url: check access to github.com"
    fi
    say "checking out $name at $commit"
    git -C "$dir" checkout -q --force --detach "$commit" >"$log" 2>&1 ||
      die "$url has no commit $commit: check $pinned_by"
    changed=1
  fi
}

# The git submodules of the checkout $1 (RETURNN's returnn/extern/...: warp-transducer, kenlm, ...) at the commits it
# records, from the URLs of its .gitmodules, as `git submodule update --init` does for a user's `git clone
# --recursive`; one at another commit or with modified tracked files is repaired. A submodule no CPU op needs whose
# commit cannot be had is left out with a note; any other stops the set-up.
submodules() {
  local dir=$1 key path recorded url
  while read -r key path; do
    recorded=$(git -C "$dir" rev-parse "HEAD:$path")
    if [ -e "$dir/$path/.git" ] && [ "$(git -C "$dir/$path" rev-parse HEAD)" = "$recorded" ] &&
      [ -z "$(git -C "$dir/$path" status --porcelain --untracked-files=no)" ]; then
      continue
    fi
    url=$(git -C "$dir" config -f .gitmodules "${key%.path}.url")
    # git refuses submodule clones from local paths unless told: a git mirror (url.<path>.insteadOf) makes them so.
    if git -C "$dir" -c protocol.file.allow=always submodule update -q --init --force -- "$path" </dev/null >"$log" 2>&1; then
      say "checked out $(basename "$dir")/$path at $recorded"
      changed=1
    elif [ "$path" = returnn/extern/blocksparse ]; then
      git -C "$dir" submodule deinit -q --force -- "$path" >/dev/null 2>&1
      echo "setup.sh: note: $(basename "$dir")/$path left empty: cannot check out $url at $recorded" \
        "(OpenAI's blocksparse kernels, GPU only)" >&2
    else
      die "cannot check out $url at $recorded into $dir/$path: check access to github.com"
    fi
  done < <(git -C "$dir" config -f .gitmodules --get-regexp '^submodule\..*\.path$' || true)
}

# 1. and 2. The virtual environment with the PyPI packages, exactly as pinned; then torch (CPU use of the CUDA
#    build) without the packages it needs only on a GPU (requirements-torch.lock says which and why).
make_venv "$venv" "$root/requirements-dev.lock"
install_pins "$venv" "$root/requirements-torch.lock" torch --no-deps

# 3. The rwth-i6 projects from their real URLs, at the commits of rwth-i6.lock, with their git submodules; a
#    checkout at another commit or with modified tracked files is repaired.
mkdir -p "$deps/src" "$deps/recipe"
while read -r name url commit; do
  checkout "$name" "$url" "$deps/src/$name" "$commit" rwth-i6.lock
  submodules "$deps/src/$name"
done < <(grep -v '^#' "$root/rwth-i6.lock" | grep .)

# 4. Make them importable the way i6 setups do: i6_core and returnn_common as top-level packages under
#    a recipe folder, returnn and sisyphus from their checkouts. One RETURNN for manager and worker.
ln -sfn ../src/i6_core "$deps/recipe/i6_core"
ln -sfn ../src/returnn_common "$deps/recipe/returnn_common"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$deps/recipe" "$deps/src/returnn" "$deps/src/sisyphus" >"$site/i6_rc_jobs_deps.pth"
cat >"$venv/bin/sis" <<EOF
#!$venv/bin/python
import sys
from sisyphus.__main__ import main
sys.exit(main())
EOF
chmod +x "$venv/bin/sis"

# 5. i6_rc_jobs itself, editable.
if ! (cd /tmp && "$venv/bin/python" -c 'import i6_rc_jobs' 2>/dev/null); then
  say "installing i6_rc_jobs (editable)"
  "$venv/bin/pip" install --disable-pip-version-check --no-deps --no-build-isolation -e "$root" >"$log" 2>&1 ||
    die "pip install -e $root failed"
  changed=1
fi

# 6. With --returnn-range: the older RETURNNs, each with the TensorFlow of its time, from the same RETURNN URL.
if [ "$range" = 1 ]; then
  url=$(awk '$1 == "returnn" {print $2}' "$root/rwth-i6.lock")
  for requirements in "$root"/returnn-range/*.txt; do
    name=$(basename "$requirements" .txt)
    commit=$(awk '$1 == "#" && $2 == "returnn" {print $3}' "$requirements")
    [ -n "$commit" ] || die "$requirements names no commit: it needs a line '# returnn <commit>'"
    make_venv "$root/.venv-returnn-$name" "$requirements"
    checkout "returnn-$name" "$url" "$deps/src/returnn-$name" "$commit" "returnn-range/$name.txt"
    submodules "$deps/src/returnn-$name"
  done
fi

if [ "$changed" = 1 ]; then
  (cd /tmp && CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" -c \
    'import sisyphus, i6_core.returnn.config, returnn.tensor, returnn_common.nn, i6_rc_jobs' >"$log" 2>&1) ||
    die "the installed stack does not import"
  say "ready: $venv"
fi
