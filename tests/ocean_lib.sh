# PufferLib 3.0.0's Ocean envs for the ocean tests (sourced after lib.sh).
# The sdist is cached in ${XDG_CACHE_HOME:-$HOME/.cache}/volley. pip cannot
# fetch it alone here (`pip download --no-binary :all:` builds its
# setup.py, which downloads raylib, and every build dependency from
# source), so the file pip would fetch is taken from PyPI's files host and
# checked against PyPI's sha256.
OCEAN_SDIST=pufferlib-3.0.0.tar.gz
OCEAN_SHA256=7df3a3e3f5f894d78d2a1f5374097890aec01473183e748abefe4f3faa10eaa9
OCEAN_URL=https://files.pythonhosted.org/packages/7c/e1/5292f9b69c6263707b40ba04a87e6b9bcc177281d31092f77afd90c412f1/$OCEAN_SDIST
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Unpacks the sdist into $TMP/pufferlib-3.0.0 (OCEAN, RAYLIB set); exits 0
# with "SKIP: <reason>" (ctest's skip pattern for the ocean tests) when it
# is neither cached nor reachable.
ocean_fetch() {
    local cache=${XDG_CACHE_HOME:-$HOME/.cache}/volley
    mkdir -p "$cache" || fail "cannot make the cache $cache"
    if ! echo "$OCEAN_SHA256  $cache/$OCEAN_SDIST" | sha256sum -c --status 2>/dev/null; then
        if ! curl -fsSL --max-time 120 -o "$cache/$OCEAN_SDIST.part" "$OCEAN_URL"; then
            rm -f "$cache/$OCEAN_SDIST.part"
            echo "SKIP: $OCEAN_SDIST is not in $cache and PyPI is not reachable"
            exit 0
        fi
        echo "$OCEAN_SHA256  $cache/$OCEAN_SDIST.part" | sha256sum -c --status ||
            fail "$OCEAN_URL does not have PyPI's sha256 $OCEAN_SHA256"
        mv "$cache/$OCEAN_SDIST.part" "$cache/$OCEAN_SDIST"
    fi
    tar -xzf "$cache/$OCEAN_SDIST" -C "$TMP" pufferlib-3.0.0/pufferlib/ocean pufferlib-3.0.0/raylib-5.5_linux_amd64/include ||
        fail "cannot unpack $cache/$OCEAN_SDIST"
    OCEAN=$TMP/pufferlib-3.0.0/pufferlib/ocean
    RAYLIB=$TMP/pufferlib-3.0.0/raylib-5.5_linux_amd64
}

# Installs the build of $VOLLEY into $TMP/prefix and points pkg-config at it.
ocean_install() {
    cmake --install "$(dirname "$VOLLEY")" --prefix "$TMP/prefix" > "$TMP/install.log" 2>&1 ||
        fail "cmake --install: $(tail -3 "$TMP/install.log")"
    export PKG_CONFIG_PATH=$TMP/prefix/lib/pkgconfig
}

# Builds envs/ocean/$1.c into $TMP/lib$1.so with docs/envs.md's line.
ocean_build() {
    local e=$1
    (cd "$TMP" && cp "$SRC/envs/ocean/$e.c" . &&
        cc -O2 -shared -fPIC -fvisibility=hidden -ffunction-sections -Wl,--gc-sections -o lib$e.so $e.c -I"$OCEAN/$e" -I"$RAYLIB/include" $(pkg-config --cflags volley) -lm) \
        > "$TMP/cc_$e.log" 2>&1 || fail "lib$e.so does not build: $(grep -m3 error "$TMP/cc_$e.log")"
}

# ocean_up NAME [FLAGS...]: `volley up --env ./libNAME.so FLAGS` for 3 s in $TMP (run NAME under
# $TMP/runs); fails unless it exits 0, steps, and its stderr holds no error, refusal or abort.
ocean_up() {
    local e=$1
    shift
    (cd "$TMP" && "$VOLLEY" up --env ./lib$e.so "$@" --port 0 --until seconds --max-seconds 3 \
        --runs "$TMP/runs" --name $e > "$TMP/up_$e.log" 2> "$TMP/up_$e.err") ||
        fail "volley up --env ./lib$e.so $* exited non-zero: $(tail -3 "$TMP/up_$e.err")"
    grep -q "steps=" "$TMP/up_$e.log" || fail "volley up --env ./lib$e.so stepped nothing"
    grep -qiE "error|refused|abort" "$TMP/up_$e.err" &&
        fail "volley up --env ./lib$e.so: $(grep -m2 -iE 'error|refused|abort' "$TMP/up_$e.err")"
    pass "volley up --env ./lib$e.so ${*##*/}: $(tail -1 "$TMP/up_$e.log" | cut -c1-90)"
}
