"""The installed vLLM with one of the project's patches applied, importable, and the end-to-end
harness run on it in a process of its own.

`overlay(patch)` builds, once per release and diff, a directory holding a `vllm` package that is the
installed one file by file: a symbolic link for every file the diff leaves alone (the compiled
extensions and their cached bytecode among them), a real copy, patched, of every file it changes.
The diff is applied by gridproof's strict applier (proofs/source/patches.py: no fuzz, a hunk off its
lines is refused by file and hunk), after the files it touches were made copies, so the installed
vLLM is never written to. Put first on a process's `sys.path`, the directory makes `import vllm`
load the patched release; `PatchedEngine` starts such a process (a worker, `python3 -m
proofs.real_vllm.patched --worker PATCH`) and runs the harness's functions in it, one call at a time.
One process can hold one vLLM: the unpatched release stays importable in the caller.

`python3 -m proofs.real_vllm.patched PATCH` prints the overlay's directory (built if needed), for
`PYTHONPATH=$(...) python3 ...` by hand.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from models.errors import GridproofError

PROJECT = Path(__file__).resolve().parents[2]
RELEASE = "0.33.0"  # the release the harness drives and the patches are written against
OVERLAY_ENV = "GRIDPROOF_VLLM_OVERLAY"  # where overlays are built (default: the user's cache)
WORKER_ENV = "GRIDPROOF_PATCHED_VLLM"  # set in a worker: the patch its vLLM carries, or TREE
TREE = "tree"  # a worker over a vLLM tree given by path: it runs whichever variant it is asked
# What each of the project's patches adds to vLLM 0.33.0, by which the loaded tree is told apart.
MARKERS = {
    "pr457": ("vllm.v1.core.kv_cache_utils", "get_mamba_recurrent_block_size"),
    "pr457-guarded": ("vllm.v1.core.kv_cache_utils", "check_mamba_checkpoint_cadence"),
}


class PatchedVllmError(GridproofError):
    """The patched vLLM cannot be built or started: one line."""


def overlay_root() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get(OVERLAY_ENV) or cache / "gridproof" / "vllm-overlay")


def installed_vllm() -> tuple[Path, str]:
    """The installed `vllm` package's directory and release, found without importing it."""
    from proofs.source.loader import VllmSource

    source = VllmSource.installed()
    if source is None:
        raise PatchedVllmError("no vLLM installed: bash tests/install-conformance.sh installs vLLM 0.33.0")
    version = source.version()
    if version != RELEASE:
        raise PatchedVllmError(f"the installed vLLM is {version}, the patches are for {RELEASE}")
    return source._directory, version


def overlay(patch: str) -> Path:
    """The directory to put first on `sys.path` for the installed vLLM with `patch` (one of the
    project's patches by name, or a .diff file) applied; built under `overlay_root()` once."""
    from proofs.source import patches
    from proofs.source.loader import SourceError

    package, version = installed_vllm()
    try:
        diff = patches.diff_file(patch, version)
        text = diff.read_text()
    except SourceError as error:
        raise PatchedVllmError(str(error)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise PatchedVllmError(f"--patch {patch}: cannot be read ({type(error).__name__})") from None
    digest = hashlib.sha256(f"{version}\0{package}\0{text}".encode()).hexdigest()[:16]
    root = overlay_root() / f"vllm-{version}+{patches._safe(diff.stem)}-{digest}"
    if (root / "vllm" / "__init__.py").exists():
        return root
    try:
        files = [f for f in patches.parse(text, f"--patch {diff}") if (f.new or f.old or "").startswith("vllm/")]
    except SourceError as error:
        raise PatchedVllmError(str(error)) from None
    root.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".overlay-", dir=root.parent))
    try:
        _link_tree(package, work / "vllm")
        for f in files:
            for name in {f.old, f.new} - {None}:
                _own_copy(work / name)
        try:
            patches.apply(files, work, f"--patch {diff}")
        except SourceError as error:
            raise PatchedVllmError(str(error)) from None
        try:
            work.rename(root)
        except OSError:  # another process built it meanwhile
            if not (root / "vllm" / "__init__.py").exists():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return root


def tree_overlay(path: str) -> Path:
    """The directory to put first on `sys.path` for a vLLM tree given by path (a checkout, an
    unpacked wheel or a .whl file) over the installed release: the installed files linked, and every
    Python file of the tree that differs from the installed one (or that the installed one lacks) a
    copy of the tree's. The tree must be of the installed release: the compiled parts are its."""
    from proofs.source.loader import SourceError, VllmSource

    package, version = installed_vllm()
    try:
        tree = VllmSource.from_path(path)
    except SourceError as error:
        raise PatchedVllmError(str(error)) from None
    if tree.version() != version:
        raise PatchedVllmError(
            f"{path}: a tree of vLLM {tree.version()}, not of the installed {version} whose compiled parts it needs"
        )
    changed = {}
    for relative, content in tree.python_files():
        installed = package.parent / relative
        if not installed.is_file() or installed.read_bytes() != content:
            changed[relative] = content
    digest = hashlib.sha256(f"{version}\0{package}".encode())
    for relative in sorted(changed):
        digest.update(f"\0{relative}\0".encode() + changed[relative])
    root = overlay_root() / f"vllm-{version}+tree-{digest.hexdigest()[:16]}"
    if (root / "vllm" / "__init__.py").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".overlay-", dir=root.parent))
    try:
        _link_tree(package, work / "vllm")
        for relative, content in changed.items():
            target = work / relative
            _own_copy(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        try:
            work.rename(root)
        except OSError:
            if not (root / "vllm" / "__init__.py").exists():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return root


def _link_tree(source: Path, target: Path) -> None:
    """`target` a tree of directories mirroring `source`, each file a link to the original."""
    for directory, subdirectories, names in os.walk(source):
        here = target / Path(directory).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in [d for d in subdirectories if os.path.islink(os.path.join(directory, d))]:
            os.symlink(os.path.join(directory, name), here / name)  # a linked directory stays a link
            subdirectories.remove(name)
        for name in names:
            os.symlink(os.path.join(directory, name), here / name)


def _own_copy(path: Path) -> None:
    """Make `path` a file of the overlay's own (a copy of what its link points at), and drop the
    bytecode linked beside it, so that the patched source is compiled afresh."""
    if path.is_symlink():
        original = Path(os.readlink(path))
        path.unlink()
        shutil.copyfile(original, path)
    elif not path.exists():
        return
    cached = path.parent / "__pycache__"
    if cached.is_dir():
        for pyc in cached.glob(f"{path.stem}.*.pyc"):
            pyc.unlink()


def loaded_patch() -> str | None:
    """Which of the project's patches the imported vLLM carries (None: the release as shipped)."""
    found = None
    for name, (module, attribute) in MARKERS.items():  # pr457-guarded's marker implies pr457's
        if hasattr(importlib.import_module(module), attribute):
            found = name
    return found


def vllm_location() -> str:
    """Where this process's `vllm` was imported from."""
    import vllm

    return str(Path(vllm.__file__).parent)


def explicit_bit(geometry, budget: int, variant: str) -> bool | None:
    """The engine's `CacheConfig.user_specified_mamba_block_size` for a geometry under a variant
    (None on a vLLM without it)."""
    from models.variants import VARIANTS
    from proofs.real_vllm.engine import EngineSetting, RealEngine, blocks_for

    setting = EngineSetting.of(geometry, budget, VARIANTS[variant])
    return RealEngine(setting, num_blocks=blocks_for(setting, 1)).explicit_cadence


# --- a worker process running the harness on the patched vLLM ----------------------------------


class PatchedEngine:
    """A process whose `vllm` is the installed release with `patch` applied; `call(function,
    *args)` runs `function` ("module:name") there with pickled arguments and returns its pickled
    result. An exception raised there is raised here as `WorkerError` with its traceback."""

    def __init__(self, patch: str | None = None, tree: str | None = None) -> None:
        if (patch is None) == (tree is None):
            raise ValueError("PatchedEngine: a patch or a tree")
        self.patch, self.tree = patch, tree
        self.root = overlay(patch) if tree is None else tree_overlay(tree)
        self._log = tempfile.TemporaryFile(mode="w+b")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root), str(PROJECT), *filter(None, [env.get("PYTHONPATH")])])
        env[WORKER_ENV] = TREE if tree is not None else patch
        self._process = subprocess.Popen(
            [sys.executable, "-m", "proofs.real_vllm.patched", "--worker", patch or TREE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=str(PROJECT),
        )
        self.loaded = self._receive()  # the worker's greeting: the patch its vLLM carries
        if tree is None and self.loaded != patch:
            self.close()
            raise PatchedVllmError(f"the worker's vLLM carries {self.loaded or 'no patch'}, not {patch}")

    def call(self, function: str, *args):
        if self._process.poll() is not None:
            raise WorkerError(f"the patched vLLM's worker has ended ({self._process.returncode})", self._tail())
        payload = pickle.dumps((function, args))
        try:
            self._process.stdin.write(struct.pack(">Q", len(payload)) + payload)
            self._process.stdin.flush()
        except BrokenPipeError:
            raise WorkerError("the patched vLLM's worker has ended", self._tail()) from None
        status, value = self._receive()
        if status == "error":
            raise WorkerError(value, self._tail())
        return value

    def _receive(self):
        header = self._process.stdout.read(8)
        if len(header) < 8:
            self._process.wait()
            raise WorkerError(f"the patched vLLM's worker ended ({self._process.returncode})", self._tail())
        (size,) = struct.unpack(">Q", header)
        return pickle.loads(self._process.stdout.read(size))

    def _tail(self, lines: int = 30) -> str:
        self._log.seek(0)
        return "\n".join(self._log.read().decode(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()

    def __enter__(self) -> PatchedEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class WorkerError(RuntimeError):
    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message + (f"\n--- the worker's last output ---\n{log}" if log.strip() else ""))


def _worker(patch: str) -> int:
    """Serve calls on stdin until it closes. The protocol owns the process's stdout: anything vLLM
    prints goes to stderr."""
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer

    def send(value) -> None:
        payload = pickle.dumps(value)
        protocol.write(struct.pack(">Q", len(payload)) + payload)
        protocol.flush()

    from proofs.real_vllm import quietly

    vllm = quietly(lambda: importlib.import_module("vllm"))
    where = Path(vllm.__file__).parent
    root = Path(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0])
    if where != root / "vllm":
        print(f"the worker imported vLLM from {where}, not from the overlay {root}", file=sys.stderr)
        return 3
    send(quietly(loaded_patch))
    while True:
        header = requests.read(8)
        if len(header) < 8:
            return 0
        (size,) = struct.unpack(">Q", header)
        function, args = pickle.loads(requests.read(size))
        module, _, name = function.partition(":")
        try:
            value = getattr(importlib.import_module(module), name)(*args)
            send(("ok", value))
        except Exception:  # noqa: BLE001 - reported to the caller, who raises it
            send(("error", traceback.format_exc()))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m proofs.real_vllm.patched", description=__doc__.split("\n")[0])
    parser.add_argument("patch", help="one of the project's patches (pr457, pr457-guarded) or a .diff file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.patch)
    try:
        print(overlay(args.patch))
    except GridproofError as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
