#!/usr/bin/env bash
# Runs the example Sisyphus setup end to end with the repo's .venv: ./recipe_examples/run.sh [DIR]
#
# DIR (default: recipe_examples/ itself) gets work/, output/ and alias/; a DIR other than recipe_examples/ first
# gets a copy of settings.py, config/ and recipe/ (kept if already there), so it is a self-contained setup directory.
# Exit status: 0 if all registered outputs exist, 1 if a job failed (its log is printed), 2 otherwise
# (the manager failed, e.g. an exception in config/, or timed out).
# A second run finds everything finished and only refreshes the output/ and alias/ links.
# RUN_TIMEOUT (seconds, default 3600) limits the manager run; tasks it started keep running and a next run
# picks them up.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
outputs=(task12ax/returnn.config task12ax/checkpoint task12ax/learning_rates)
outputs+=(task12ax_rf/returnn.config task12ax_rf/check_report task12ax_rf/checkpoint task12ax_rf/learning_rates)
outputs+=(ctc_conformer/learning_rates ctc_conformer/checkpoint ctc_conformer/prior.txt)

"$root/setup.sh"

dir=${1:-$here}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ "$dir" != "$here" ]; then
  [ -e "$dir/settings.py" ] || cp "$here/settings.py" "$dir/settings.py"
  for part in config recipe; do
    if [ ! -e "$dir/$part" ]; then
      mkdir "$dir/$part"
      cp "$here/$part"/*.py "$dir/$part/"
    fi
  done
fi
# Without work/, `sis manager` asks whether to create it and dies reading the answer.
mkdir -p "$dir/work"
cd "$dir"

export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=3 I6_RC_JOBS_ROOT="$root"
echo "run.sh: sis manager in $dir"
# -r: start jobs without asking. -co: move jobs that failed in an earlier run aside and retry them, instead of
# asking. The manager exits by itself once all outputs are done or nothing can run any more (failed job).
# The one question left, "All calculations are done ... (u)?" when a run finds everything finished, gets "u":
# refresh the output/ and alias/ links. Its exit status says little (0 after an exception too), so its last
# words and then the outputs are checked below.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
printf 'u\n' | timeout --signal=INT --kill-after=60 "${RUN_TIMEOUT:-3600}" "$root/.venv/bin/sis" manager -r -co 2>&1 |
  tee "$log" || status=$?
echo # ends the line of the manager's last question, if it asked one
if [ "$status" = 124 ]; then
  echo "run.sh: sis manager timed out after ${RUN_TIMEOUT:-3600} s" >&2
  exit 2
fi
# How the manager ends when it ran to its end: all outputs done / a job failed / nothing was left to do.
ends="All output calculated|There is nothing I can do|All calculations are done"
if [ "$status" != 0 ] || ! grep -qE "$ends" "$log"; then
  echo "run.sh: sis manager failed (exit status $status), see its output above" >&2
  exit 2
fi

missing=()
for out in "${outputs[@]}"; do
  [ -e "output/$out" ] || missing+=("$out")
done
if [ ${#missing[@]} = 0 ]; then
  echo "run.sh: all outputs are finished, in $dir/output:"
  for out in "${outputs[@]}"; do
    echo "  output/$out -> $(readlink -f "output/$out")"
  done
  exit 0
fi

echo "run.sh: missing outputs in $dir/output: ${missing[*]}" >&2
failed=0
while IFS= read -r err; do
  job=$(dirname "$err")
  task=$(basename "$err")
  echo "run.sh: job failed: $dir/$job" >&2
  echo "run.sh:   log: $dir/$job/log.${task#error.}" >&2
  failed=1
done < <(find work -name 'error.*' -path '*Job.*' -not -path '*.cleared.*' 2>/dev/null | sort)
[ "$failed" = 1 ] && exit 1
echo "run.sh: no job failed; see the manager output above" >&2
exit 2
