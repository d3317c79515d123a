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

Read: the torch queries in :data:`_QUERIES`, the backend flags of :data:`_BACKEND_GETTERS` (Note [backend
flags read through torch._C]), and an environment variable by ``os.environ[k]``, ``os.environ.get``,
``os.getenv`` or ``k in os.environ`` (all of them reach ``os._Environ.__getitem__``). Not read: the whole
environment iterated, and anything read by ``thunder.jit(fn, executors=[fusion_alias.executor])`` used
directly (no call to guard: it keeps Thunder's behaviour).

Note [backend flags read through torch._C]
------------------------------------------
``torch.backends`` flags that are properties of the module (``torch.backends.cudnn.deterministic``,
``.benchmark``, ``.enabled``, ``torch.backends.mkldnn.enabled``, ``torch.backends.opt_einsum.strategy``,
``torch.backends.mha.get_fastpath_enabled()``) were right already: Thunder's prologue reads them again at
every call. Those torch answers by calling a getter of ``torch._C`` from Python code the interpreter runs were
not: ``torch.backends.cuda.matmul.allow_tf32`` (a module ``__getattr__``), ``allow_fp16_reduced_precision_
reduction``, ``torch.backends.cuda.flash_sdp_enabled()`` and the other ``*_sdp_enabled()``,
``torch.backends.mkldnn.matmul.fp32_precision`` / ``cudnn.conv.fp32_precision`` (``_get_fp32_precision_
getter(backend, op)``), ``torch.backends.cuda.preferred_linalg_library()``, and ``torch._C._get_cudnn_
deterministic()`` called directly: the interpreter calls the builtin once, while tracing, and the cached
program kept its answer after the flag changed, silently (session 34 probe; plain ``thunder.jit`` too)::

    def f(x):
        return x * 2 if torch.backends.cuda.matmul.allow_tf32 else x * 3
    jf = fusion_alias.jit(f); jf(x)                     # 3 x
    torch.backends.cuda.matmul.allow_tf32 = True
    jf(x)                                               # eager 2 x; was 3 x

Each getter of :data:`_BACKEND_GETTERS` is answered and recorded as the queries above, keyed by its name and
arguments (``PROCESS[("C", "_get_fp32_precision_getter", ("mkldnn", "matmul"))]``).
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


# torch._C's getters of process-wide backend flags (Note [backend flags read through torch._C]), called by
# torch.backends' Python code; each may take constant arguments (``_get_fp32_precision_getter(backend, op)``)
_BACKEND_GETTERS = {
    name: getattr(torch._C, name) for name in (
        "_get_blas_preferred_backend", "_get_cpu_allow_fp16_reduced_precision_reduction",
        "_get_cublas_allow_bf16_reduced_precision_reduction", "_get_cublas_allow_fp16_accumulation",
        "_get_cublas_allow_fp16_reduced_precision_reduction", "_get_cublas_allow_tf32", "_get_cudnn_allow_tf32",
        "_get_cudnn_benchmark", "_get_cudnn_deterministic", "_get_cudnn_enabled", "_get_cudnn_sdp_enabled",
        "_get_deterministic_algorithms", "_get_deterministic_algorithms_warn_only",
        "_get_deterministic_fill_uninitialized_memory", "_get_flash_sdp_enabled", "_get_float32_matmul_precision",
        "_get_fp32_precision_getter", "_get_linalg_preferred_backend", "_get_math_sdp_allow_fp16_bf16_reduction",
        "_get_math_sdp_enabled", "_get_mem_efficient_sdp_enabled", "_get_miopen_immediate",
        "_get_mkldnn_deterministic", "_get_mkldnn_enabled", "_get_nnpack_enabled", "_get_onednn_allow_tf32",
        "_get_overrideable_sdp_enabled", "_get_qengine", "_get_rocm_fa_preferred_backend", "_get_sdp_priority_order",
        "_get_sm_carveout_experimental", "_get_warnAlways",
    ) if hasattr(torch._C, name)
}


class _Process:
    """What the process says now, by subscript (the guard's ``_follow`` reads a path of subscripts):
    ``PROCESS[name]`` for a query of :data:`_QUERIES`, ``PROCESS[("environ", key)]`` for a variable
    (None when it is not set), ``PROCESS[("C", name, args)]`` for a getter of :data:`_BACKEND_GETTERS`; each
    as a ``Shape`` of ``("value", answer)``."""

    __slots__ = ()

    def __getitem__(self, key):
        if isinstance(key, tuple):
            if key[0] == "C":
                return Shape(("value", _answer(_BACKEND_GETTERS[key[1]](*key[2]))))
            return Shape(("value", os.environ.get(key[1])))
        return Shape(("value", _QUERIES[key]()))


def _answer(value):
    """A getter's answer as the guard compares it (an enum of torch._C by its name: ``_LinalgBackend.Default``)."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


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


def _backend_getter(name: str):
    getter = _BACKEND_GETTERS[name]

    def lookaside(*args):
        answer = getter(*args)
        if all(isinstance(a, (str, int, bool)) for a in args):  # (else torch raises; nothing to guard)
            _record(("C", name, args), _answer(answer))
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
    for name, fn in _BACKEND_GETTERS.items():
        executor._lookasides.setdefault(fn, _backend_getter(name))
    executor._lookasides[_ENVIRON_GETITEM] = _environ_getitem
