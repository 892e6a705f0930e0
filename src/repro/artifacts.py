"""Artifact store: safetensors tensors + JSON metadata, keyed by a hash of their config, written atomically.

Everything a run produces (fine-tuned backbones as sparse task vectors, masks, graft scores) is stored as
``<root>/<kind>/<hash>.safetensors`` + ``.json`` (JSON-only results: ``<root>/<kind>/<hash>.json``).  Writes go to
a temporary file and are renamed into place, so a killed run never leaves a half-written artifact; the temp files
of a killed write are removed by the next run that takes that artifact's lock.

A store that cannot lie.  Every sidecar carries a ``"_store"`` block: the sha256 of the tensor file (of the
payload, for JSON results) and the fingerprint of the code that produced it (the docstring- and comment-free
source of the computing modules, plus the torch and transformers versions).  The fingerprint lives in the sidecar,
not in the key, so a code change is detected without changing any cache key: :class:`ArtifactStore` reports a
missing part, a corrupt file (bad checksum, unreadable JSON or safetensors) or a stale entry in one line, moves it
to ``<root>/.quarantine/`` and the caller recomputes it.  Entries written before checksums existed count as
stale.  A file lock (``<root>/.locks/``) keeps two processes from computing one artifact at once; on a mount
without ``flock`` an ``O_EXCL`` claim file (:func:`claim`) does.

Keys that cannot collide (key scheme :data:`KEY_SCHEME`, recorded in the sidecar): tensors enter keys through
:func:`tensor_digest`, a sha256 of their whole content, dtype and shape; data through a digest of its content.  The
sidecar's own metadata (shapes, dtypes, kind) is checksummed too, so an edited sidecar is rejected like an edited
tensor file.  Entries of an earlier key scheme are stale; :meth:`ArtifactStore.retire_old_keys` moves them to the
quarantine once per store, one line each.

This module is a leaf (it imports nothing from repro), so ``repro cache ls|verify|clear`` can use it without
loading models.  Tensors are read with safetensors only; nothing is ever unpickled.
"""

from __future__ import annotations

import ast
import errno
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save_file

log = logging.getLogger("repro.artifacts")

STORE_FIELD = "_store"
#: Version of the cache-key scheme, recorded in every sidecar (``"_store": {"keys": 2}``).  2: tensors are keyed by
#: their whole content (:func:`tensor_digest`) and data by its content (:func:`repro.paths.folder_digest`), no longer
#: by the first 4096 bytes and by the data folder's path.  An entry of an earlier scheme is stale.
KEY_SCHEME = 2
REKEYED_MARKER = f".keys-v{KEY_SCHEME}"  # in a store root: its old-scheme entries were moved out once
PACKAGE_DIR = Path(__file__).resolve().parent
SLOW_WRITE_ENV = "REPRO_TEST_SLOW_WRITE"  # seconds to sleep inside an atomic write, before the rename (tests only)


class ArtifactError(Exception):
    """A stored artifact that cannot be used: ``reason`` says why in a few words (corrupt, incomplete, stale)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = Path(path), reason


# --------------------------------------------------------------------------------------------------------
# keys and fingerprints
# --------------------------------------------------------------------------------------------------------
def config_hash(config: dict[str, Any]) -> str:
    """Stable 16-hex-digit hash of a JSON-serializable config."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def tensor_digest(tensors: Mapping[str, torch.Tensor]) -> str:
    """The one tensor fingerprint (16 hex digits) that enters cache keys: sha256 of the whole content.

    For each name in sorted order: the name, the dtype, the shape and every byte of the tensor (nothing is
    sampled, so two tensors that differ anywhere get different keys; a full sha256 of a 100M-entry float32
    vector takes about a second).  Key scheme :data:`KEY_SCHEME`; entries keyed by the earlier, sampled digest
    (first 4096 bytes + sum |t|) are stale (:func:`stale_reason`).
    """
    h = hashlib.sha256(f"tensor_digest/v{KEY_SCHEME}".encode())
    for n in sorted(tensors):
        t = tensors[n].detach().cpu().contiguous().reshape(-1)
        h.update(f"\0{n}\0{tensors[n].dtype}\0{tuple(tensors[n].shape)}\0{t.numel()}\0".encode())
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16: hash its 16-bit patterns
            t = t.view(torch.int16)
        elif t.dtype == torch.bool:
            t = t.to(torch.uint8)
        h.update(memoryview(t.numpy()).cast("B"))
    return h.hexdigest()[:16]


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _payload_sha(payload: Any) -> str:
    return _sha256_bytes(json.dumps(payload, sort_keys=True, default=_json_default).encode())


def _module_files(module: str) -> list[Path]:
    """The source files of ``repro.x.y`` (a package: every .py below it), found by path without importing."""
    parts = module.split(".")
    if parts[0] != "repro":
        raise ValueError(f"code fingerprints cover repro modules only, got {module!r}")
    base = PACKAGE_DIR.joinpath(*parts[1:])
    if base.is_dir():
        return sorted(base.rglob("*.py"))
    if base.with_suffix(".py").is_file():
        return [base.with_suffix(".py")]
    raise ValueError(f"no source for module {module!r} under {PACKAGE_DIR}")


def _code_text(path: Path) -> str:
    """Source without docstrings, comments or layout (so editing prose does not invalidate artifacts)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


#: public name of the docstring- and comment-free source text the fingerprints hash (the workflow's job params)
code_text = _code_text


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


@functools.lru_cache(maxsize=None)
def code_fingerprint(modules: tuple[str, ...]) -> dict[str, Any]:
    """``{"digest", "modules", "torch", "transformers"}`` of the code that computes an artifact (cached per process;
    ``code_fingerprint.cache_clear()`` after editing a module in a running process)."""
    h = hashlib.sha256()
    for module in sorted(set(modules)):
        for path in _module_files(module):
            h.update(str(path.relative_to(PACKAGE_DIR)).encode())
            h.update(_code_text(path).encode())
    versions = {"torch": _version("torch"), "transformers": _version("transformers")}
    h.update(json.dumps(versions, sort_keys=True).encode())
    return {"digest": h.hexdigest()[:16], "modules": sorted(set(modules)), **versions}


OLD_KEYS_REASON = ("stale: keyed the old way (tensors by their first 4096 bytes, data by its path), so it may "
                   "belong to other inputs")


def stale_reason(meta: Mapping[str, Any], code: Mapping[str, Any] | None = None) -> str | None:
    """Why a stored entry's code fingerprint does not match (None = current).  ``code`` defaults to the
    fingerprint of the modules the entry itself records."""
    stamp = meta.get(STORE_FIELD, {}).get("code") if isinstance(meta.get(STORE_FIELD), dict) else None
    if not stamp:
        return "stale: written before checksums and code fingerprints"
    if meta[STORE_FIELD].get("keys") != KEY_SCHEME:
        return OLD_KEYS_REASON
    try:
        current = code or code_fingerprint(tuple(stamp.get("modules", ())))
    except (ValueError, OSError, SyntaxError) as e:
        return f"stale: its code is gone ({e})"
    for lib in ("torch", "transformers"):
        if stamp.get(lib) != current.get(lib):
            return f"stale: made with {lib} {stamp.get(lib)}, now {current.get(lib)}"
    if stamp.get("modules") != current.get("modules") or stamp.get("digest") != current.get("digest"):
        return f"stale: the code of {', '.join(stamp.get('modules', []))} changed since it was computed"
    return None


# --------------------------------------------------------------------------------------------------------
# atomic files
# --------------------------------------------------------------------------------------------------------
def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        slow = os.environ.get(SLOW_WRITE_ENV)
        if slow:  # lets the kill-and-resume test SIGKILL a process in the middle of a write
            time.sleep(float(slow))
        os.chmod(tmp, 0o644)  # mkstemp creates 0600 files; artifacts and results are meant to be shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json(path: str | Path, obj: Any) -> None:
    """Atomic JSON write."""
    def w(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=False, default=_json_default)
    _atomic_write(Path(path), w)


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


def _tensor_file(path: str | Path) -> Path:
    path = Path(path)
    return path if path.suffix == ".safetensors" else path.with_suffix(".safetensors")


def read_json(path: str | Path) -> dict[str, Any]:
    """A JSON file; an unreadable one raises :class:`ArtifactError` (absent: FileNotFoundError)."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArtifactError(path, f"corrupt: its JSON does not parse ({e.__class__.__name__})") from None
    if not isinstance(obj, dict):
        raise ArtifactError(path, "corrupt: its JSON is not an object")
    return obj


def save_tensors(path: str | Path, tensors: Mapping[str, torch.Tensor], meta: dict[str, Any]) -> None:
    """Write ``<path>.safetensors`` then ``<path>.json`` (the JSON, carrying the file's sha256, marks it complete).

    A ``"_store"`` dict already in ``meta`` (the code fingerprint) is kept and completed with the checksum.
    """
    st = _tensor_file(path)
    contiguous = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    _atomic_write(st, lambda tmp: save_file(contiguous, tmp))
    stamp = dict(meta.get(STORE_FIELD) or {})
    stamp["sha256"] = _sha256_bytes(st.read_bytes())
    body = json.loads(json.dumps({k: v for k, v in meta.items() if k != STORE_FIELD}, default=_json_default))
    stamp["meta_sha256"] = _payload_sha(body)  # shapes, dtypes, kind...: what turns the bytes into the value
    write_json(st.with_suffix(".json"), {**body, STORE_FIELD: stamp})


def load_tensors(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Tensors and metadata of a stored artifact, checked against the sidecar's sha256 when it has one.

    FileNotFoundError when neither file exists; :class:`ArtifactError` when one part is missing, a file does not
    parse, or the checksum differs.
    """
    st = _tensor_file(path)
    js = st.with_suffix(".json")
    if not js.exists() and not st.exists():
        raise FileNotFoundError(f"no artifact at {st} (+ .json)")
    if not js.exists() or not st.exists():
        raise ArtifactError(st, f"incomplete: {(js if not js.exists() else st).name} is missing")
    meta = read_json(js)
    data = st.read_bytes()
    stamp = meta.get(STORE_FIELD) if isinstance(meta.get(STORE_FIELD), dict) else {}
    want = stamp.get("sha256")
    if want is not None and _sha256_bytes(data) != want:
        raise ArtifactError(st, "corrupt: the tensor file's sha256 differs from the one recorded in its .json")
    want_meta = stamp.get("meta_sha256")
    if want_meta is None and "keys" in stamp:
        raise ArtifactError(st, "corrupt: its .json lost the checksum of its metadata (meta_sha256)")
    if want_meta is not None and _payload_sha({k: v for k, v in meta.items() if k != STORE_FIELD}) != want_meta:
        raise ArtifactError(st, "corrupt: its .json metadata (shapes, dtypes, ...) differs from the checksum it "
                                "records; it was edited")
    try:
        tensors = load_safetensors_bytes(data)
    except (SafetensorError, ValueError, RuntimeError) as e:
        raise ArtifactError(st, f"corrupt: unreadable safetensors ({str(e)[:80]})") from None
    return tensors, meta


def save_json_artifact(path: str | Path, value: Any, meta: dict[str, Any]) -> None:
    """A JSON-only artifact ``{"value", "meta", "_store": {"sha256" of value+meta, "code"}}`` (atomic)."""
    body = {k: v for k, v in meta.items() if k != STORE_FIELD}
    payload = json.loads(json.dumps({"value": value, "meta": body}, default=_json_default))
    stamp = {**dict(meta.get(STORE_FIELD) or {}), "sha256": _payload_sha(payload)}
    write_json(Path(path).with_suffix(".json"), {**payload, STORE_FIELD: stamp})


def load_json_artifact(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """``(value, meta)`` of :func:`save_json_artifact` (meta includes ``"_store"``); checksum-verified."""
    js = Path(path).with_suffix(".json")
    if not js.exists():
        raise FileNotFoundError(f"no artifact at {js}")
    obj = read_json(js)
    stamp = obj.get(STORE_FIELD)
    if not isinstance(stamp, dict) or "value" not in obj:
        return obj, obj  # a results file of the old layout: reported stale by the store
    if _payload_sha({"value": obj["value"], "meta": obj.get("meta", {})}) != stamp.get("sha256"):
        raise ArtifactError(js, "corrupt: its content's sha256 differs from the one it records")
    return obj["value"], {**obj.get("meta", {}), STORE_FIELD: stamp}


# --------------------------------------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------------------------------------
@dataclass
class Entry:
    """One stored artifact as ``repro cache ls`` lists it."""

    kind: str
    key: str
    files: list[Path]
    bytes: int
    status: str  # "ok", or the one-line problem


class ArtifactStore:
    """Content-addressed store under ``root``: ``store.path(kind, config)``, locks, quarantine and maintenance."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, kind: str, config: dict[str, Any]) -> Path:
        return self.root / kind / config_hash(config)

    @contextmanager
    def lock(self, path: Path) -> Iterator[None]:
        """Exclusive lock on one artifact (blocks while another process computes it)."""
        lock_dir = self.root / ".locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        with open(lock_dir / f"{path.parent.name}.{path.name}.lock", "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX)
            except OSError as e:  # a mount without (cluster-wide) flock: a retried SLURM job may still run beside
                if e.errno not in NO_LOCK_ERRNOS:  # its first attempt, so an O_EXCL claim file serialises them
                    raise
                _warn_no_lock(self.root, e)
                with claim(lock_dir / f"{path.parent.name}.{path.name}.claim"):
                    yield
                return
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def clean_temps(self, path: Path) -> list[Path]:
        """Remove the temp files a killed write of this artifact left (call while holding its lock)."""
        gone = sorted(path.parent.glob(f".{path.name}.*.tmp"))
        for tmp in gone:
            tmp.unlink(missing_ok=True)
        return gone

    def quarantine(self, path: Path, reason: str) -> Path | None:
        """Move every file of the artifact at ``path`` to ``<root>/.quarantine/`` and report it in one line.

        An incomplete entry (one file of the pair missing: a write killed between the two renames) holds nothing
        worth keeping and is deleted instead."""
        if reason.startswith("incomplete"):
            for f in _artifact_files(path):
                f.unlink(missing_ok=True)
            _notice(f"artifact {path.parent.name}/{path.name} {reason} (a killed write?); removed, recomputing")
            return None
        dest = self.root / ".quarantine" / path.parent.name / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}"
        dest.mkdir(parents=True, exist_ok=True)
        for f in _artifact_files(path):
            shutil.move(str(f), dest / f.name)
        (dest / "REASON").write_text(reason + "\n")
        _notice(f"artifact {path.parent.name}/{path.name} {reason}; moved to {dest}, recomputing")
        return dest

    def retire_old_keys(self) -> list[Path]:
        """Once per store: move every entry keyed by an earlier :data:`KEY_SCHEME` to the quarantine, one line each.

        Such an entry can never be looked up under the new keys, and must not be reused: the sampled tensor digest
        let two different task vectors share a key, and data was keyed by its folder's path.  Entries whose JSON
        is missing or unreadable are left to the normal checks.  A marker file ``.keys-v<N>`` records that the
        sweep ran, so later runs only stat it."""
        marker = self.root / REKEYED_MARKER
        if not self.root.is_dir() or marker.exists():
            return []
        moved = []
        for kdir in sorted(p for p in self.root.glob("[!.]*") if p.is_dir()):
            for js in sorted(kdir.glob("[!.]*.json")):
                try:
                    meta = read_json(js)
                except (ArtifactError, OSError):
                    continue
                stamp = meta.get(STORE_FIELD)
                if isinstance(stamp, dict) and stamp.get("keys") == KEY_SCHEME:
                    continue
                path = js.with_suffix("")
                try:
                    with self.lock(path):
                        if js.exists():
                            self.quarantine(path, OLD_KEYS_REASON if isinstance(stamp, dict) and stamp.get("code")
                                            else "stale: written before checksums and code fingerprints")
                            moved.append(path)
                except OSError:  # another process moved it first
                    continue
        try:
            marker.write_text(f"entries of key schemes before {KEY_SCHEME} were moved to .quarantine/\n")
        except OSError:
            pass
        return moved

    # --- maintenance (repro cache ...) ---------------------------------------------------------------------
    def entries(self, kind: str | None = None, verify: bool = False) -> list[Entry]:
        """Every artifact (optionally of one kind); ``verify`` checks checksums and code fingerprints."""
        out = []
        kinds = [self.root / kind] if kind else sorted(p for p in self.root.glob("[!.]*") if p.is_dir())
        for kdir in kinds:
            stems = sorted({f.name.split(".")[0] for f in kdir.glob("[!.]*")
                            if f.is_file() and f.suffix in (".safetensors", ".json")})  # a stray NOTES.txt is no entry
            for stem in stems:
                path = kdir / stem
                files = _artifact_files(path)
                status = check_entry(path) if verify else "unchecked"
                out.append(Entry(kdir.name, stem, files, sum(f.stat().st_size for f in files), status))
        return out

    def orphan_temps(self) -> list[Path]:
        """Temp files of killed writes whose artifact nobody holds the lock of."""
        out = []
        for tmp in sorted(self.root.glob("*/.*.tmp")):
            stem = tmp.name[1:].split(".")[0]
            lock_file = self.root / ".locks" / f"{tmp.parent.name}.{stem}.lock"
            if not lock_file.exists():
                out.append(tmp)
                continue
            with open(lock_file, "a") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                except OSError as e:  # no locks on this mount: a writer may hold it, leave the file
                    if e.errno in NO_LOCK_ERRNOS:
                        continue
                    raise
                fcntl.flock(f, fcntl.LOCK_UN)
                out.append(tmp)
        return out

    def clear(self, kind: str | None = None, stale_only: bool = False) -> list[Entry]:
        """Delete artifacts (all, one kind, or only the ones :func:`check_entry` rejects) and orphan temp files."""
        removed = []
        for e in self.entries(kind, verify=stale_only):
            if stale_only and e.status == "ok":
                continue
            for f in e.files:
                f.unlink(missing_ok=True)
            removed.append(e)
        for tmp in self.orphan_temps():
            tmp.unlink(missing_ok=True)
        return removed


#: the errors of ``flock`` on a filesystem that has no locks (NFS without lockd, some FUSE / object-store mounts)
NO_LOCK_ERRNOS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)})
_NO_LOCK_WARNED: set[str] = set()


def _warn_no_lock(root: Path, error: OSError) -> None:
    """One notice per store and process: the store runs without file locks."""
    if str(root) not in _NO_LOCK_WARNED:
        _NO_LOCK_WARNED.add(str(root))
        _notice(f"artifact store {root}: file locks are unavailable on this filesystem ({error.strerror}); using "
                f"claim files (created with O_EXCL, refreshed every {CLAIM_STALE_S / 4:.0f} s) instead")


#: seconds after which a claim file nobody refreshed is broken (its holder died); the holder touches it every quarter
CLAIM_STALE_S = 120.0


@contextmanager
def claim(path: Path, poll: float = 0.2) -> Iterator[None]:
    """An exclusive lock without ``flock``: the file ``path`` created with ``O_CREAT | O_EXCL`` (atomic on NFS v3+
    and local filesystems), holding ``host pid token``.  A thread touches it while held; a waiter breaks a claim
    whose holder is a dead process of this host, or that nobody touched for :data:`CLAIM_STALE_S` seconds by the
    filesystem's own clock (a probe file's mtime, so clocks of other nodes do not matter)."""
    token = f"{socket.gethostname()} {os.getpid()} {uuid.uuid4().hex}"
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            why = _claim_stale(path)
            if why:
                broken = path.with_name(f"{path.name}.{uuid.uuid4().hex}.broken")
                try:
                    os.rename(path, broken)  # one waiter wins the rename; the others find the claim gone
                    broken.unlink()
                    _notice(f"lock {path.name}: broke the claim of {why}")
                except FileNotFoundError:
                    pass
                continue
            time.sleep(poll)
            continue
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        break
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(CLAIM_STALE_S / 4):
            try:
                os.utime(path)
            except FileNotFoundError:
                return
    beat = threading.Thread(target=refresh, name=f"claim {path.name}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join()
        try:
            if path.read_text().strip() == token:
                path.unlink()
        except FileNotFoundError:
            pass


def _claim_stale(path: Path) -> str | None:
    """Why the claim at ``path`` is stale ("host pid: a dead process", "... not refreshed for N s"), else None."""
    try:
        holder = path.read_text().split()
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        return None
    if len(holder) < 2:  # being written right now (created, not yet filled): give it the usual time
        holder = ["?", "?"]
    host, pid = holder[0], holder[1]
    if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
        return f"{host} {pid}: a dead process"
    probe = path.parent / ".clock"
    probe.touch()
    idle = probe.stat().st_mtime - mtime
    return f"{host} {pid}: not refreshed for {idle:.0f} s" if idle > CLAIM_STALE_S else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _notice(line: str) -> None:
    """One line on the ``repro.artifacts`` logger (stderr when logging is not configured: a notebook shows it)."""
    log.warning(line)


def _artifact_files(path: Path) -> list[Path]:
    return [f for f in (path.with_suffix(".safetensors"), path.with_suffix(".json")) if f.exists()]


def check_entry(path: Path) -> str:
    """``"ok"`` or the one-line problem of the stored artifact at ``path`` (either layout)."""
    try:
        if path.with_suffix(".safetensors").exists() or not path.with_suffix(".json").exists():
            _, meta = load_tensors(path)
        else:
            meta = read_json(path.with_suffix(".json"))
            if isinstance(meta.get(STORE_FIELD), dict) and "value" in meta:
                _, meta = load_json_artifact(path)
            elif isinstance(meta.get(STORE_FIELD), dict) and "meta_sha256" in meta[STORE_FIELD]:
                return f"incomplete: {path.with_suffix('.safetensors').name} is missing"  # a tensor entry's sidecar
    except ArtifactError as e:
        return e.reason
    except FileNotFoundError:
        return "missing"
    return stale_reason(meta) or "ok"


def format_entries(entries: Sequence[Entry]) -> str:
    """A table of entries for the CLI."""
    lines = [f"{'kind':<12} {'key':<18} {'size':>10}  status"]
    for e in entries:
        lines.append(f"{e.kind:<12} {e.key:<18} {e.bytes:>10,}  {e.status}")
    return "\n".join(lines)
