# Sourced by scripts/test, scripts/schemathesis and scripts/security. Python virtual
# environments kept outside the clone, in ${XDG_CACHE_HOME:-~/.cache}/strongroom,
# so a fresh clone does not install them again. Each is named after what it
# holds (the pinned packages, given by the caller) and the Python that runs
# it, so a new pin or a new Python makes a new one and an old one is never
# mistaken for it. Made under a lock (two runs at once make it once), and
# used only once it is complete.

strongroom_cache_dir() {
    printf '%s/strongroom' "${XDG_CACHE_HOME:-$HOME/.cache}"
}

# The registry packages of Cargo.lock (those with a `source`): what the
# build caches outside the clone are keyed by, so that a workspace crate
# added to the lock file does not make them compile everything again.
strongroom_registry_lock() {
    awk '/^\[\[package\]\]/ { if (blk ~ /\nsource = /) printf "%s", blk; blk = $0 "\n"; next }
         { blk = blk $0 "\n" }
         END { if (blk ~ /\nsource = /) printf "%s", blk }' Cargo.lock
}

# cached_venv NAME PACKAGE...: prints the path of a virtual environment with
# PACKAGE... installed (pip's requirement syntax, pinned), making it if needed.
cached_venv() {
    local name=$1
    shift
    local python root venv
    # The interpreter's version and where it lives: a venv links to it.
    python=$(python3 -c 'import hashlib, sys; print("py%d.%d.%d-%s" % (sys.version_info[:3] + (hashlib.sha256(sys.base_prefix.encode()).hexdigest()[:8],)))') || return 1
    root="$(strongroom_cache_dir)/venv"
    venv="$root/$name-$python"
    mkdir -p "$root" || return 1
    (
        flock 9 || exit 1
        if [ ! -f "$venv/.complete" ]; then
            printf '\n==> installing %s into %s\n' "$*" "$venv" >&2
            rm -rf "$venv"
            if python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q --disable-pip-version-check "$@" >&2; then
                touch "$venv/.complete"
            else
                rm -rf "$venv"
                exit 1
            fi
        fi
    ) 9>"$venv.lock" || return 1
    printf '%s\n' "$venv"
}
