#!/usr/bin/env bash
# Installs into the current python3 environment what tests/conformance needs: the real
# vLLM 0.33.0, runnable on a CPU, from a pinned lock installed with --no-deps (letting pip
# resolve vLLM's own requirements would pull a CUDA torch and several GB of NVIDIA packages).
# Idempotent: when every pin is already installed it only checks, in about a second.
set -euo pipefail
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1

here="$(cd "$(dirname "$0")" && pwd)"
lock="$here/conformance/requirements-vllm.txt"

# Exit 0 iff every `name==version` pin of the lock is the installed version.
check_lock() {
    python3 - "$lock" <<'PY'
import re
import sys
from importlib import metadata


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


installed = {canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}
missing = []
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if line:
        name, version = line.split("==")
        if installed.get(canonical(name)) != version:
            missing.append(f"{line} (installed: {installed.get(canonical(name), 'none')})")
for entry in missing:
    print(f"install-conformance: needs {entry}", file=sys.stderr)
sys.exit(1 if missing else 0)
PY
}

if check_lock 2>/dev/null; then
    echo "install-conformance: the lock is installed"
    exit 0
fi
# torch==2.13.0+cpu is the CPU build that lies on disk on these machines (pip's find-links).
python3 -m pip install --no-deps --progress-bar off -r "$lock"
check_lock
python3 -c "import vllm.v1.core.sched.scheduler, vllm.platforms.interface"
echo "install-conformance: installed, and vLLM imports"
