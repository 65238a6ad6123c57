#!/usr/bin/env bash
# The step runner behind `npm test` (scripts/test-all.sh), sourced, not run.
#
# Guarantees: every step runs, whatever happened to the steps before it; each
# step runs its command with `set -e` in a subshell of its own, so a failing
# command ends that step only; steps started in the background have their
# output captured and printed, whole and in the order they were started, when
# `wait_steps` collects them; `steps_summary` prints one row per step (step,
# result, seconds, and when it ended: seconds since the runner was loaded — the
# run's critical path reads off that column) in the order the steps were
# declared and returns 1 when any step failed, 0 otherwise.
#
#   run_step ID "description" command [args...]     run in the foreground, output streamed
#   start_step ID "description" command [args...]   start in the background, output captured
#   wait_steps [ID...]                             wait for background steps (all without IDs)
#   steps_summary                                  print the table, return 1 if any step failed
#
# TEST_STEPS=id1,id2 runs only those steps (the others are left out of the summary).
# The command may be a shell function defined by the sourcing script.

if [[ -n "${_RUN_STEPS_LOADED:-}" ]]; then return 0; fi
_RUN_STEPS_LOADED=1

_steps_out="$(mktemp -d "${TMPDIR:-/tmp}/agentd-steps.XXXXXX")"
_steps_order=()
declare -A _steps_desc=() _steps_result=() _steps_seconds=() _steps_ended=() _steps_pid=()

_steps_cleanup() {
  local id
  for id in "${!_steps_pid[@]}"; do
    kill -TERM -- "-${_steps_pid[$id]}" 2>/dev/null || true
  done
  rm -rf "$_steps_out"
}
trap _steps_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

_step_selected() { # $1 step id
  [[ -z "${TEST_STEPS:-}" ]] && return 0
  [[ ",${TEST_STEPS// /}," == *",$1,"* ]]
}

_micros() { local t="${EPOCHREALTIME/[.,]/}"; printf '%s' "$((10#$t))"; }

_seconds_since() { # $1 start in microseconds
  local d=$(($(_micros) - $1))
  printf '%d.%d' "$((d / 1000000))" "$((d % 1000000 / 100000))"
}

_steps_t0=$(_micros)

_step_declare() { # $1 id, $2 description
  if [[ -n "${_steps_desc[$1]+set}" ]]; then
    echo "run-steps: step '$1' declared twice" >&2
    exit 2
  fi
  _steps_order+=("$1")
  _steps_desc[$1]="$2"
}

run_step() { # id description command...
  local id="$1" desc="$2"
  shift 2
  _step_selected "$id" || return 0
  _step_declare "$id" "$desc"
  printf '\n=== %s [%s]\n' "$desc" "$id"
  local start rc
  start=$(_micros)
  (set -e; "$@")
  rc=$?
  _steps_seconds[$id]=$(_seconds_since "$start")
  _steps_ended[$id]=$(_seconds_since "$_steps_t0")
  _steps_result[$id]=$rc
  if ((rc != 0)); then printf '=== %s: FAILED (exit %d)\n' "$id" "$rc"; fi
  return 0
}

start_step() { # id description command...
  local id="$1" desc="$2"
  shift 2
  _step_selected "$id" || return 0
  _step_declare "$id" "$desc"
  printf '\n=== %s [%s]: started in the background, its output follows when it ends\n' "$desc" "$id"
  # Job control on just for this: the step gets a process group of its own, so
  # an interrupted run can end it with everything it started (servers,
  # compilers), while Ctrl-C still reaches this script and its foreground step.
  set -m
  (
    start=$(_micros)
    (set -e; "$@") </dev/null >"$_steps_out/$id.log" 2>&1
    rc=$?
    printf '%s %s %s\n' "$rc" "$(_seconds_since "$start")" "$(_seconds_since "$_steps_t0")" >"$_steps_out/$id.result"
  ) &
  _steps_pid[$id]=$!
  set +m
}

wait_steps() { # [id...]: all background steps still running when none given
  local ids=("$@") id rc secs ended
  if ((${#ids[@]} == 0)); then
    for id in "${_steps_order[@]}"; do
      [[ -n "${_steps_pid[$id]+set}" ]] && ids+=("$id")
    done
  fi
  for id in "${ids[@]}"; do
    [[ -n "${_steps_pid[$id]+set}" ]] || continue
    wait "${_steps_pid[$id]}" 2>/dev/null
    unset "_steps_pid[$id]"
    printf '\n=== %s [%s] (ran in the background)\n' "${_steps_desc[$id]}" "$id"
    cat "$_steps_out/$id.log" 2>/dev/null
    if read -r rc secs ended <"$_steps_out/$id.result" 2>/dev/null; then
      _steps_result[$id]=$rc
      _steps_seconds[$id]=$secs
      _steps_ended[$id]=$ended
    else
      _steps_result[$id]=1 # the step's shell died before it could record a result
      _steps_seconds[$id]="?"
      _steps_ended[$id]="?"
    fi
    if ((_steps_result[$id] != 0)); then printf '=== %s: FAILED (exit %d)\n' "$id" "${_steps_result[$id]}"; fi
  done
  return 0
}

steps_summary() {
  wait_steps
  local id failed=0 result width=4
  for id in "${_steps_order[@]}"; do ((${#id} > width)) && width=${#id}; done
  printf '\n=== summary\n'
  printf "%-${width}s  %-6s  %8s  %8s  %s\n" step result seconds ended description
  for id in "${_steps_order[@]}"; do
    if [[ "${_steps_result[$id]}" == 0 ]]; then
      result=ok
    else
      result=FAILED
      failed=$((failed + 1))
    fi
    printf "%-${width}s  %-6s  %8s  %8s  %s\n" "$id" "$result" "${_steps_seconds[$id]}" "${_steps_ended[$id]}" "${_steps_desc[$id]}"
  done
  if ((failed > 0)); then
    printf '%d of %d steps failed\n' "$failed" "${#_steps_order[@]}"
    return 1
  fi
  printf 'all %d steps passed\n' "${#_steps_order[@]}"
  return 0
}
