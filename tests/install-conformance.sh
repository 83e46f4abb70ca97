#!/usr/bin/env bash
# Installs what tests/conformance needs: the real vLLM 0.33.0 into the current python3
# environment, and vLLM 0.34.0 into a venv of its own ($GRIDPROOF_VLLM_VENVS/vllm-0.34.0, default
# ~/.cache/gridproof/venvs; proofs/real_vllm/other_release.py runs it there), each runnable on a CPU,
# from a pinned lock installed with --no-deps (letting pip resolve vLLM's own requirements would
# pull a CUDA torch and several GB of NVIDIA packages). Idempotent: when every pin is already
# installed it only checks, in about a second.
set -euo pipefail
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1

here="$(cd "$(dirname "$0")" && pwd)"
lock="$here/conformance/requirements-vllm.txt"
lock_034="$here/conformance/requirements-vllm-0.34.0.txt"
# Under $HOME, not $XDG_CACHE_HOME, which CI and the test session point at proof caches of their own.
venvs="${GRIDPROOF_VLLM_VENVS:-$HOME/.cache/gridproof/venvs}"
venv_034="$venvs/vllm-0.34.0"

# Exit 0 iff every `name==version` pin of the lock ($2, default the 0.33.0 one) is installed in
# the python ($1, default python3).
check_lock() {
    "${1:-python3}" - "${2:-$lock}" <<'PY'
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
    echo "install-conformance: the vLLM 0.33.0 lock is installed"
else
    # torch==2.13.0+cpu is the CPU build that lies on disk on these machines (pip's find-links).
    python3 -m pip install --no-deps --progress-bar off -r "$lock"
    check_lock
    python3 -c "import vllm.v1.core.sched.scheduler, vllm.platforms.interface"
    echo "install-conformance: vLLM 0.33.0 installed, and it imports"
fi

if [ -x "$venv_034/bin/python" ] && check_lock "$venv_034/bin/python" "$lock_034" 2>/dev/null; then
    echo "install-conformance: the vLLM 0.34.0 venv is installed ($venv_034)"
else
    python3 -m venv "$venv_034"
    "$venv_034/bin/python" -m pip install --no-deps --progress-bar off -q -r "$lock_034"
    check_lock "$venv_034/bin/python" "$lock_034"
    "$venv_034/bin/python" -c "import vllm.v1.core.sched.scheduler, vllm.platforms.interface"
    echo "install-conformance: vLLM 0.34.0 installed in $venv_034, and it imports"
fi
