"""A vLLM release with one of the project's patches applied (patches/), or
with any unified diff: its Python files copied from the installed vLLM or
the release's wheel into a cache directory, the diff applied there, and the
tree read as any other (`gridproof source --patch NAME`, or a --diff side
written X.Y.Z+NAME: patched_source, spec_source).

The diff is applied strictly: every hunk's context and removed lines must
be in the file as the diff states them, at the stated line or within
OFFSET_LINES of it, else the patch is refused by file and hunk (no fuzz).
Only Python files are copied: the executor reads nothing else.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from proofs.source.loader import SourceError, VllmSource
from proofs.source.releases import WHEEL_CACHE, is_release, source_for

PATCHES = Path(__file__).resolve().parents[2] / "patches"
OFFSET_LINES = 200
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def patch_cache() -> Path:
    return Path(os.environ.get("GRIDPROOF_VLLM_PATCHED") or WHEEL_CACHE.parent / "vllm-patched")


def known(version: str) -> list[str]:
    """The project's patches for a release: patches/vllm-X.Y.Z/NAME.diff."""
    return sorted(p.stem for p in (PATCHES / f"vllm-{version}").glob("*.diff"))


def diff_file(spec: str, version: str | None) -> Path:
    """A patch named as the project names it (for `version`), or a diff file."""
    if version is not None and NAME.fullmatch(spec) and (PATCHES / f"vllm-{version}" / f"{spec}.diff").is_file():
        return PATCHES / f"vllm-{version}" / f"{spec}.diff"
    path = Path(spec)
    if path.suffix in (".diff", ".patch") and path.is_file():
        return path
    names = ", ".join(known(version)) if version else ""
    offered = f" (the project's for vLLM {version}: {names})" if names else ""
    raise SourceError(f"--patch {spec}: neither one of the project's patches nor a .diff file{offered}")


@dataclass
class FilePatch:
    old: str | None  # path in the tree, None for a new file
    new: str | None  # None for a deleted file
    hunks: list[tuple[int, list[str], list[str]]] = field(default_factory=list)  # (old start, old lines, new lines)


def parse(text: str, label: str) -> list[FilePatch]:
    """The files of a unified diff (git's or diff -u's), paths without their
    first component (patch -p1)."""
    files: list[FilePatch] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            files.append(FilePatch(_path(line[4:]), _path(lines[i + 1][4:])))
            i += 2
            continue
        match = _HUNK.match(line)
        if match:
            if not files:
                raise SourceError(f"{label}: a hunk before any file header (line {i + 1})")
            old_count = int(match.group(2) or 1) if match.group(2) != "0" else 0
            new_count = int(match.group(4) or 1) if match.group(4) != "0" else 0
            old, new, i = [], [], i + 1
            while (old_count > 0 or new_count > 0) and i < len(lines):
                body = lines[i]
                kind, content = body[:1], body[1:]
                if body.startswith("\\"):  # "\ No newline at end of file"
                    i += 1
                    continue
                if kind in (" ", "\n"):
                    content = content if kind == " " else "\n"
                    old.append(content)
                    new.append(content)
                    old_count, new_count = old_count - 1, new_count - 1
                elif kind == "-":
                    old.append(content)
                    old_count -= 1
                elif kind == "+":
                    new.append(content)
                    new_count -= 1
                else:
                    raise SourceError(f"{label}: line {i + 1} is not part of its hunk")
                i += 1
            if old_count or new_count:
                raise SourceError(f"{label}: the last hunk of {files[-1].new or files[-1].old} is cut short")
            if i < len(lines) and lines[i].startswith("\\"):
                _strip_last_newline(old if lines[i - 1][:1] == "-" else new)
                i += 1
            files[-1].hunks.append((int(match.group(1)), old, new))
            continue
        i += 1
    if not files:
        raise SourceError(f"{label}: no file in the diff")
    return files


def _strip_last_newline(lines: list[str]) -> None:
    if lines and lines[-1].endswith("\n"):
        lines[-1] = lines[-1][:-1]


def _path(header: str) -> str | None:
    name = header.split("\t")[0].strip()
    if name == "/dev/null":
        return None
    parts = Path(name).parts
    if len(parts) < 2 or ".." in parts or Path(name).is_absolute():
        raise SourceError(f"the diff names the file {name!r}, not a path under the tree (patch -p1)")
    return str(Path(*parts[1:]))


def apply(files: list[FilePatch], root: Path, label: str) -> None:
    """Apply the parsed diff to the tree at `root`, in place: each hunk's old lines at its stated line
    (shifted by the hunks before) or within OFFSET_LINES of it, files created, rewritten or deleted. A file
    missing or already there, or a hunk that does not apply, raises SourceError naming `label`."""
    for f in files:
        target = root / (f.new or f.old)
        text = (root / f.old).read_text() if f.old is not None and (root / f.old).is_file() else None
        if f.old is not None and text is None:
            raise SourceError(f"{label}: {f.old} is not in the tree")
        if f.old is None and (root / f.new).exists():
            raise SourceError(f"{label}: the diff creates {f.new}, which the tree already has")
        lines = (text or "").splitlines(keepends=True)
        shift = 0
        for n, (start, old, new) in enumerate(f.hunks, start=1):
            at = _locate(lines, old, start - 1 + shift if old else len(lines))
            if at is None:
                raise SourceError(
                    f"{label}: hunk {n} of {f.old or f.new} does not apply (its lines are not at line {start})"
                )
            lines[at : at + len(old)] = new
            shift += len(new) - len(old)
        if f.new is None:
            (root / f.old).unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(lines))


def _locate(lines: list[str], old: list[str], near: int) -> int | None:
    if not old:
        return min(max(near, 0), len(lines))
    for delta in range(OFFSET_LINES + 1):
        for at in (near + delta, near - delta) if delta else (near,):
            if 0 <= at <= len(lines) - len(old) and lines[at : at + len(old)] == old:
                return at
    return None


def patched(base: VllmSource, version: str, diff: Path) -> VllmSource:
    """`base` (a release's tree or wheel) with `diff` applied, cached by the
    release and the diff's content."""
    try:
        text = diff.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise SourceError(f"--patch {diff}: cannot be read as a diff ({type(error).__name__})") from None
    digest = hashlib.sha256(f"{version}\0{text}".encode()).hexdigest()[:16]
    root = patch_cache() / f"vllm-{version}+{_safe(diff.stem)}-{digest}"
    label = f"vLLM {version} + {diff.name}"
    if not (root / "vllm" / "v1").is_dir():
        files = parse(text, f"--patch {diff}")
        root.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".patching-", dir=root.parent))
        try:
            count = 0
            for relative, content in base.python_files():
                target = work / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                count += 1
            if not count:
                raise SourceError(f"{base.label}: no Python files to patch")
            apply(files, work, f"--patch {diff}")
            try:
                work.rename(root)
            except OSError:  # another run made it meanwhile
                if not (root / "vllm" / "v1").is_dir():
                    raise
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    source = VllmSource.from_path(str(root))
    source.label = label
    return source


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def spec_source(spec: str) -> VllmSource:
    """A --diff side: a release (X.Y.Z), a release with one of the project's
    patches (X.Y.Z+NAME), or a path."""
    release, plus, patch = spec.partition("+")
    if plus and is_release(release):
        return patched_source(source_for(version=release), patch)
    return source_for(version=spec) if is_release(spec) else source_for(path=spec)


def patched_source(source: VllmSource, patch: str) -> VllmSource:
    """`source` with the project's patch `patch` (for its release) or a diff file applied."""
    version = source.version()
    if version is None:
        raise SourceError(f"{source.label}: no vllm/_version.py to tell which release the patch is for")
    return patched(source, version, diff_file(patch, version))
