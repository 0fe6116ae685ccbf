"""Checkpoints of a ``logt.minimize`` run: atomic save, verified load.

A checkpoint is one ``.npz`` file (no pickle): the arrays of the driver's
state and of the trace, plus a JSON header with the format version, the run's
fingerprint (method, options, T, L, lam, shape, oracle and domain types, the
generator's initial state, a hash of ``x0``), the resolved parameters, the
counters, the driver's scalar state, the generator's current state and a
SHA-256 of every array. It is written to a temporary file in the same folder,
flushed, then renamed over the target (``os.replace``): a crash leaves the old
checkpoint or the new one, never half of one.
"""
import hashlib
import json
import os
import tempfile
import time
import zipfile

import numpy as np

FORMAT = "logt-checkpoint/1"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: unreadable, corrupt, or from a different run."""


def _json_default(o):
    if isinstance(o, np.ndarray):
        return {"__ndarray__": o.tolist(), "dtype": str(o.dtype)}
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"cannot store {type(o).__name__} in a checkpoint")


def _json_hook(d):
    if "__ndarray__" in d:
        return np.array(d["__ndarray__"], dtype=d["dtype"])
    return d


def to_json(obj):
    return json.dumps(obj, default=_json_default, sort_keys=True)


def from_json(text):
    return json.loads(text, object_hook=_json_hook)


def _digest(a):
    a = np.ascontiguousarray(a)
    h = hashlib.sha256()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def split_state(state):
    """Split a driver state dict into arrays and JSON-able scalars."""
    arrays, scalars = {}, {}
    for k, v in state.items():
        if isinstance(v, np.ndarray):
            arrays[k] = v
        else:
            scalars[k] = v
    return arrays, scalars


def save(path, header, arrays):
    """Write ``header`` (JSON-able dict) and ``arrays`` (name -> ndarray) to ``path`` atomically."""
    path = os.fspath(path)
    header = dict(header, format=FORMAT, digests={k: _digest(v) for k, v in arrays.items()})
    blob = np.frombuffer(to_json(header).encode(), dtype=np.uint8)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".logt-ckpt-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, __header__=blob, **{f"a/{k}": v for k, v in arrays.items()})
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:                                      # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def load(path):
    """Read a checkpoint; returns ``(header, arrays)``. ``CheckpointError`` if unusable."""
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            names = list(z.files)
            if "__header__" not in names:
                raise CheckpointError(f"{path} is not a logt checkpoint (no header)")
            header = from_json(bytes(z["__header__"]).decode())
            arrays = {n[2:]: z[n] for n in names if n.startswith("a/")}
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path} does not exist") from None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path} is not a readable logt checkpoint (corrupt or truncated?): "
                              f"{type(exc).__name__}: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a logt checkpoint of format {FORMAT!r}")
    digests = header.get("digests", {})
    if set(digests) != set(arrays):
        raise CheckpointError(f"{path} is corrupt: its arrays do not match its header")
    for k, a in arrays.items():
        if _digest(a) != digests[k]:
            raise CheckpointError(f"{path} is corrupt: array {k!r} fails its SHA-256 check")
    return header, arrays


class Checkpointer:
    """Saves a run's state to ``path`` at boundaries, at most every ``every`` seconds (0: every boundary)."""

    def __init__(self, path, every, fingerprint):
        self.path = os.fspath(path)
        self.every = float(every)
        self.fingerprint = fingerprint
        self._last = time.monotonic()
        self.n_saved = 0

    def maybe_save(self, run, state):
        now = time.monotonic()
        if self.every > 0 and now - self._last < self.every:
            return False
        self.save(run, state)
        self._last = time.monotonic()
        return True

    def save(self, run, state):
        st_arrays, st_scalars = split_state(state)
        snap = run.snapshot()
        arrays = {f"state/{k}": v for k, v in st_arrays.items()}
        arrays.update({f"trace/{k}": v for k, v in snap.pop("trace").items()})
        header = {
            "fingerprint": self.fingerprint,
            "params": run.params,
            "state_scalars": st_scalars,
            "counters": snap,
            "rng_state": run.rng.bit_generator.state,
        }
        save(self.path, header, arrays)
        self.n_saved += 1
