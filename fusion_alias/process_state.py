"""Process-wide settings a program reads while it is traced, guarded like an identity answer.

Note [a process setting read inside the function]
--------------------------------------------------
Thunder's interpreter calls ``torch.are_deterministic_algorithms_enabled()``, ``torch.get_num_threads()``
or ``os.environ.get("FLAG")`` once, while tracing, and the trace keeps the answer; its prologue checks
the call's tensors, numbers and strings, not the process. So a program compiled under one setting kept
running under another, silently (session 32 probes; plain ``thunder.jit`` too)::

    def f(x):
        if torch.are_deterministic_algorithms_enabled():
            return x * 2
        return x * 3
    jf = fusion_alias.jit(f)
    jf(x)                                   # 3 x
    torch.use_deterministic_algorithms(True)
    jf(x)                                   # eager: 2 x;  was: 3 x

    def g(x):
        return x * int(os.getenv("SCALE", "1"))   # SCALE=1, g(x), SCALE=5, g(x): eager 5 x; was x

(A variable set that was unset, or unset, changed ``os.environ``'s keys, which the guard of a dict's keys
read by the program caught since session 32, outside_reads.py; a new value of a variable that was set did
not change them.)

(``torch.compile`` guards such reads too: its global-state guard, and per-key guards on ``os.environ``.)
So while ``fusion_alias.jit`` compiles, each such read answers as the process does and is recorded with
the identity answers (tensor_identity.py, Note [identity answers are guarded]) as a path the guard
follows at every call: a subscript of :data:`PROCESS`, which answers what the process says *now*
(``PROCESS["get_num_threads"]``, ``PROCESS[("environ", "SCALE")]``, None for a variable that is not
set), as a ``Shape`` of the value (object_shapes.py), so the pattern compares values. A call where any
answer differs compiles its own program. Each recorded read costs about a microsecond a call; a read
is recorded once per compilation.

Read: the torch queries in :data:`_QUERIES`, and an environment variable by ``os.environ[k]``,
``os.environ.get``, ``os.getenv`` or ``k in os.environ`` (all of them reach
``os._Environ.__getitem__``). Not read: ``torch.backends`` flags (attributes of Python modules,
outside_reads.py), the whole environment iterated, and anything read by
``thunder.jit(fn, executors=[fusion_alias.executor])`` used directly (no call to guard: it keeps
Thunder's behaviour).
"""

from __future__ import annotations

import os

import torch
from thunder.core.interpreter import PseudoInst, ProvenanceRecord, do_raise

from fusion_alias import context
from fusion_alias.object_shapes import Shape

# the torch queries of process-wide state a program may branch on, by the name the guard asks
_QUERIES = {
    "are_deterministic_algorithms_enabled": torch.are_deterministic_algorithms_enabled,
    "is_deterministic_algorithms_warn_only_enabled": torch.is_deterministic_algorithms_warn_only_enabled,
    "get_num_threads": torch.get_num_threads,
    "get_num_interop_threads": torch.get_num_interop_threads,
    "is_anomaly_enabled": torch.is_anomaly_enabled,
    "is_anomaly_check_nan_enabled": torch.is_anomaly_check_nan_enabled,
    "get_float32_matmul_precision": torch.get_float32_matmul_precision,
    "get_default_device": torch.get_default_device,
}


class _Process:
    """What the process says now, by subscript (the guard's ``_follow`` reads a path of subscripts):
    ``PROCESS[name]`` for a query of :data:`_QUERIES`, ``PROCESS[("environ", key)]`` for a variable
    (None when it is not set); each as a ``Shape`` of ``("value", answer)``."""

    __slots__ = ()

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return Shape(("value", os.environ.get(key[1])))
        return Shape(("value", _QUERIES[key]()))


PROCESS = _Process()
_PROCESS_RECORD = ProvenanceRecord(PseudoInst.CONSTANT, inputs=[], value=PROCESS)


def _record(key, answer) -> None:
    """Guard the compilation being traced on ``PROCESS[key]`` answering ``answer`` (once per key)."""
    ctx = context.current()
    if not ctx.has_call:  # (the executor used directly: nothing to guard)
        return
    path = ("process", key)
    if path in ctx.outside_paths:
        return
    ctx.outside_paths.add(path)
    record = ProvenanceRecord(
        PseudoInst.BINARY_SUBSCR, inputs=[_PROCESS_RECORD, ProvenanceRecord(PseudoInst.CONSTANT, inputs=[], value=key)]
    )
    ctx.identity_records.append((record, Shape(("value", answer))))


def _query(name: str):
    def lookaside(*args, **kwargs):
        answer = _QUERIES[name](*args, **kwargs)
        _record(name, answer)
        return answer

    lookaside.__name__ = name
    return lookaside


def _environ_getitem(environ, key):
    """``os.environ[key]`` as the process answers it, recorded (a missing key raises ``KeyError`` in the
    program, as in eager, and is recorded as not set)."""
    if environ is not os.environ or not isinstance(key, str):
        return _ENVIRON_GETITEM(environ, key)
    value = os.environ.get(key)
    _record(("environ", key), value)
    if value is None:
        return do_raise(KeyError(key))
    return value


_ENVIRON_GETITEM = type(os.environ).__getitem__


def register(executor) -> None:
    """Lend ``executor`` the lookasides that answer and record process settings (module Note)."""
    for name, fn in _QUERIES.items():
        executor._lookasides.setdefault(fn, _query(name))
    executor._lookasides[_ENVIRON_GETITEM] = _environ_getitem
