# Shell functions shared by the cli_*.sh tests of one subcommand (sourced). The caller
# sets T (its temporary folder), CASE (the case it runs) and CLI_CMD (the subcommand whose
# messages start "vidkern CLI_CMD: ").

fail() {
    echo "FAIL ($CASE): $*" >&2
    # Keep the inputs (random ones cannot be regenerated) for a replay.
    trap - EXIT INT TERM
    echo "inputs and outputs kept in $T" >&2
    exit 1
}

# must_fail WHAT OUTFILE CMD...: exit status 1, one "vidkern CLI_CMD: ..." line on stderr,
# OUTFILE (if not -) and any *.tmp absent afterwards.
must_fail() {
    what=$1
    out=$2
    shift 2
    "$@" >"$T/stdout" 2>"$T/stderr"
    rc=$?
    [ $rc -eq 1 ] || fail "$what: exit $rc, expected 1 ($(cat "$T/stderr"))"
    lines=$(wc -l <"$T/stderr")
    [ "$lines" -eq 1 ] || fail "$what: $lines lines on stderr, expected one: $(cat "$T/stderr")"
    grep -q "^vidkern $CLI_CMD: " "$T/stderr" || fail "$what: message not 'vidkern $CLI_CMD: ...'"
    if [ "$out" != - ] && [ -e "$out" ]; then fail "$what: left $out behind"; fi
    if ls "$T"/*.tmp >/dev/null 2>&1; then fail "$what: left a .tmp file behind"; fi
    echo "ok: $what -> $(cat "$T/stderr")"
}
