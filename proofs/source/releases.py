"""Which vLLM source a run reads: a path, the installed vLLM, or a release's
wheel from the package index (downloaded once into a cache, read as a zip,
never installed); and which model a run holds it to. A release with one of
the project's patches applied is proofs/source/patches.py's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from proofs.source.loader import SourceError, VllmSource

# Downloaded release wheels: $GRIDPROOF_VLLM_WHEELS, else under the user's cache directory.
WHEEL_CACHE = Path(
    os.environ.get("GRIDPROOF_VLLM_WHEELS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gridproof" / "vllm-wheels"
)


# A release as the package index names it (0.33.0, 0.6.3.post1, 0.11.0rc2): checked before the name is
# globbed in the wheel cache or given to pip, where "*" would match any cached wheel and "../x" a path.
# Three numbers at least, as vLLM numbers its releases and names its wheels (pip would take 0.33 for
# 0.33.0, whose wheel is not named 0.33).
RELEASE = re.compile(r"\d+\.\d+(\.\d+)+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")


def is_release(text: str) -> bool:
    return RELEASE.fullmatch(text) is not None


def source_for(path: str | None = None, version: str | None = None, download: bool = True) -> VllmSource:
    """The vLLM source at `path`; else the installed vLLM when `version` is None or matches it; else that
    release's wheel from the cache, downloaded when absent unless `download` is False. SourceError when no
    vLLM is installed, `version` is not a release, or the wheel is neither cached nor downloaded."""
    if path is not None:
        return VllmSource.from_path(path)
    installed = VllmSource.installed()
    if version is None:
        if installed is None:
            raise SourceError("no vLLM installed: give --vllm PATH or --vllm-version X.Y.Z")
        return installed
    if not is_release(version):
        raise SourceError(f"--vllm-version: expected a release such as 0.33.0, got {version!r}")
    if installed is not None and installed.version() == version:
        return installed
    wheel = cached_wheel(version)
    if wheel is None:
        if not download:
            raise SourceError(f"vLLM {version}: no wheel in {WHEEL_CACHE}")
        wheel = _download(version)
    return VllmSource(f"vLLM {version} ({wheel.name})", wheel=wheel)


def cached_wheel(version: str) -> Path | None:
    found = sorted(WHEEL_CACHE.glob(f"vllm-{version}-*.whl"))
    return found[0] if found else None


def _download(version: str) -> Path:
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    print(f"downloading the vLLM {version} wheel into {WHEEL_CACHE} (pip download --no-deps) ...", file=sys.stderr)
    command = [sys.executable, "-m", "pip", "download", f"vllm=={version}", "--no-deps", "-q", "-d", str(WHEEL_CACHE)]
    done = subprocess.run(command, capture_output=True, text=True)
    wheel = cached_wheel(version)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["pip gave no reason"]
        # pip's reason, not a warning printed after it
        reason = next((line for line in reversed(lines) if line.startswith("ERROR:")), lines[-1])
        raise SourceError(f"vLLM {version}: download failed: {reason.removeprefix('ERROR: ')}")
    if wheel is None:
        raise SourceError(f"vLLM {version}: pip downloaded no wheel named vllm-{version}-*.whl")
    return wheel


def variant_for(name: str | None, patch: str | None):
    """--variant, else the patch's name when it names a variant (pr457,
    pr457-guarded; for --diff, the B side's X.Y.Z+NAME), else the baseline."""
    from pathlib import Path

    from models.variants import BASELINE, VARIANTS, get_variant

    if name is not None:
        return get_variant(name)
    if patch:
        stem = patch.partition("+")[2] if is_release(patch.partition("+")[0]) else patch
        stem = Path(stem).stem if stem.endswith((".diff", ".patch")) else stem
        if stem in VARIANTS:
            return VARIANTS[stem]
        if "+" not in patch and not is_release(patch):
            raise SourceError(f"--patch {patch}: which model is it? give --variant")
    return BASELINE
