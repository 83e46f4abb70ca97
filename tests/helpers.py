"""What several test modules share: running the `gridproof` command in a fresh process."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def gridproof(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`gridproof ARGS` in a fresh process (the installed command, else the module): its output,
    exit status and Z3's resource counts owe nothing to what this process ran before."""
    exe = shutil.which("gridproof")
    command = [exe] if exe else [sys.executable, "-m", "proofs.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False)
