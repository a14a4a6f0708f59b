#!/usr/bin/env bash
# Makes sure cargo fmt and cargo clippy are available (they are rustup components).
set -euo pipefail
for comp in rustfmt clippy; do
    cmd=$([ "$comp" = rustfmt ] && echo fmt || echo clippy)
    if ! cargo "$cmd" --version >/dev/null 2>&1; then
        echo "installing rust component $comp"
        rustup component add "$comp"
    fi
done
