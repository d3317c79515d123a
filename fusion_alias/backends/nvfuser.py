"""The nvFuser backend (CUDA): the region's definition on a real ``nvfuser_direct.FusionDefinition``.

:class:`NvFuserFusion` is the callable a fusion bound symbol runs when the
backend is ``"nvfuser"``. It drives the very same lowering as the reference
backend (``fusion_alias.lowering.define_region``) on a real
``nvfuser_direct.FusionDefinition``, through :class:`NvFuserAdapter`, a thin object
that translates the few places where the lowering's calls and the real API
differ (see Note [what the adapter translates]).

Importing this module never imports nvFuser, CUDA or Thunder's nvFuser
executor (``thunder.executors.nvfuserex_impl`` raises on import without CUDA):
``missing()`` checks CUDA first and imports ``nvfuser_direct`` only where a
device exists (or where :func:`frontend` is asked for it explicitly, as the CPU
definitions check does), and nothing here touches Thunder's nvFuser module.

Note [which nvFuser module]
---------------------------
The backend runs on ``nvfuser_direct``, nvFuser's current Python front end,
and only on it. The classic ``nvfuser`` module is dropped, not kept as a
fallback: the wheels for torch 2.10 and later (``nvfuser-cu130-torch210``, and
the bundle that loads it under torch 2.11 on the lent GPU machines) ship only
``nvfuser_direct``; Thunder 0.2.6 itself drives ``nvfuser_direct`` from
nvFuser 0.2.34 on; and the classic ``FusionDefinition()`` needs a CUDA device
even to be built, so a classic path could never have been checked here: it
would be a branch that no test and no CPU check reaches. ``nvfuser_direct``
imports on a CPU machine and builds and prints definitions there (only
``execute`` needs CUDA), which is what ``scripts/check_nvfuser_definitions.sh``
uses: :func:`build_definition` is the one function that turns a region into
a real definition, for the backend and for that check alike.

Note [per-call guard and cache key]
-----------------------------------
A definition is built lazily, per input layout: nvFuser bakes each input's
contiguity and stride order into ``define_tensor``, and checks them again at
``execute``. Built definitions are keyed by :func:`cache_key`: shapes, strides,
dtypes and devices of the inputs *and* the region's alias groups, so a
definition built for one aliasing is never reused for another. Each call first
runs :func:`check_aliasing`: inputs that the region was compiled to treat as
independent (in no common alias group) must not share a byte. Only pairs that
live in the same storage are compared exactly (``fusion_alias.overlap``), so
the common case costs one storage lookup per tensor. ``fusion_alias.jit``
already re-specialises on the alias structure of the arguments; the guard is
the backstop for callers that bypass it (the executor used directly, a tensor
``set_()`` onto another's storage between calls), and it fails loudly instead
of letting nvFuser race.

Note [outputs]
--------------
``define_region`` adds write-backs first (``add_output(v, alias_input=d)``),
then the plain outputs listed by ``lowering.emitted_outputs(spec)``. nvFuser
hides an output aliased to an input when the aliased value was not already a
fusion output (``Fusion::aliasOutputToInput`` sets ``hide_output``), and
``execute`` does not return hidden outputs. Thunder's own ``copy_`` translation
writes ``set(value)`` back for exactly that reason, and so does the adapter,
so the aliased value is always a fresh, hidden one even when the written value
is also a plain output or is itself a fusion input. To stay right should an
nvFuser version return aliased outputs after all, the wrapper takes the *last*
``len(emitted_outputs)`` results (write-backs come first). Views and ``copy_``
results are then made by ``lowering.assemble_outputs``: the destination input
itself, or a view replayed with torch on the tensor whose memory it names.

Note [Thunder's wrapper interface]
----------------------------------
Thunder's own nvFuser regions are ``FusionDefinitionWrapper`` objects, and its
tools read them by attribute: ``thunder.examine.get_nvfuser_repro(trace,
name)`` needs ``last_used`` (the definition last run) and ``last_inputs``
(kept when the compile option ``nv_store_fusion_inputs=True`` is given), and
the benchmark and report utilities read ``last_used`` too. That class lives in
``thunder.executors.nvfuserex_impl``, which cannot be imported without CUDA,
so :class:`NvFuserFusion` cannot subclass it here; it implements the same
interface instead (``name``, ``use_cache``, ``last_used``, ``last_inputs``,
``store_inputs``, ``save_fake_inputs``, ``enable_options``,
``disable_options``, ``cache_info()``, ``cache_clear()``) and honours the same
compile options (``nv_store_fusion_inputs``, ``nv_save_fake_inputs``,
``nv_enable_options``, ``nv_disable_options``, ``nv_skip_cache``). So::

    jitted = fusion_alias.jit(fn, backend="nvfuser", nv_store_fusion_inputs=True)
    jitted(x, x[0, 0])
    print(thunder.examine.get_nvfuser_repro(thunder.last_traces(jitted)[-1], "FusionAlias0"))

prints nvFuser's own repro script for the region. With ``nv_skip_cache`` a
definition is built on every call, as Thunder's wrapper does.

Note [regions nvFuser does not take]
------------------------------------
A region with a slice of step other than 1 (nvFuser slices with step 1 only)
is never sent to nvFuser, and neither is a call with a CPU tensor that is not
0-d (nvFuser takes CUDA tensors and CPU scalars only; the executor should not
route such regions here). Both run on torch through the reference backend
(``reads-first``, nvFuser's own semantics), correct but unfused, and the
wrapper's repr says so for the first.
"""

from __future__ import annotations

import collections
import functools
import warnings
from collections.abc import Sequence

import torch

# ---------------------------------------------------------------------------
# Availability
# ---------------------------------------------------------------------------


_import_error: list[str] = []  # why `import nvfuser_direct` failed, when it did


@functools.cache
def _nvfuser():
    """The ``nvfuser_direct`` module, or None where it is not installed or does not load."""
    try:
        import nvfuser_direct

        return nvfuser_direct
    except ModuleNotFoundError as e:
        if e.name != "nvfuser_direct":  # installed, but something it needs is missing
            _import_error.append(f"{type(e).__name__}: {e}")
        return None
    except Exception as e:  # installed but broken, e.g. built for another torch (undefined c10 symbols)
        _import_error.append(f"{type(e).__name__}: {e}")
        return None


def _import_problem() -> str | None:
    if _nvfuser() is not None:
        return None
    if _import_error:
        return (
            f"nvFuser (nvfuser_direct) is installed but does not load with torch {torch.__version__} "
            f"(its wheels are built for one torch release): {_import_error[0]}"
        )
    return (
        "nvFuser's nvfuser_direct is not installed (pip install nvfuser-cu130-torch210 with torch 2.10, "
        "Python 3.12; see requirements-nvfuser.txt)"
    )


def frontend():
    """The ``nvfuser_direct`` module, imported even without CUDA (definitions build on CPU).

    Raises RuntimeError naming the problem where it is not installed or does not load.
    """
    why = _import_problem()
    if why is not None:
        raise RuntimeError(f"fusion_alias: {why}")
    return _nvfuser()


def missing() -> str | None:
    """Why the nvFuser backend cannot run here, or None when it can."""
    if not torch.cuda.is_available():
        return "no CUDA device is available (torch.cuda.is_available() is False)"
    return _import_problem()


def available() -> bool:
    return missing() is None


def require() -> None:
    why = missing()
    if why is not None:
        raise RuntimeError(f"fusion_alias: backend='nvfuser' cannot run: {why}")


# ---------------------------------------------------------------------------
# Cache key and runtime alias guard (pure functions: they run on any device)
# ---------------------------------------------------------------------------


def input_descriptor(x) -> tuple:
    """What a built definition depends on for one argument."""
    if isinstance(x, torch.Tensor):
        return ("tensor", tuple(x.shape), tuple(x.stride()), x.dtype, x.device.type, x.device.index)
    return ("scalar", type(x).__name__)


def cache_key(spec, args: Sequence) -> tuple:
    """Key of a built definition: every input's layout plus the region's alias groups."""
    return (tuple(input_descriptor(a) for a in args), tuple(map(tuple, spec.alias_groups)))


def _groups_by_name(spec) -> dict[str, frozenset]:
    groups: dict[str, set] = {}
    for gi, g in enumerate(spec.alias_groups):
        for name in g:
            groups.setdefault(name, set()).add(gi)
    return {k: frozenset(v) for k, v in groups.items()}


def _layout(t: torch.Tensor) -> str:
    return f"shape {tuple(t.shape)}, strides {tuple(t.stride())}, storage offset {t.storage_offset()}"


def check_aliasing(spec, args: Sequence, groups: dict[str, frozenset] | None = None) -> None:
    """Raise RuntimeError when two inputs in no common alias group share memory.

    ``groups`` (name -> alias-group indices) may be passed precomputed.
    """
    from fusion_alias.components import shared_storage_groups
    from fusion_alias.overlap import may_overlap

    groups = _groups_by_name(spec) if groups is None else groups
    tensors = [((p.name, a), a) for p, a in zip(spec.inputs, args) if isinstance(a, torch.Tensor)]
    none: frozenset = frozenset()
    for bucket in shared_storage_groups(tensors):  # may_overlap is conservative on uninspectable ones
        for i in range(len(bucket)):
            n1, t1 = bucket[i]
            g1 = groups.get(n1, none)
            for n2, t2 in bucket[i + 1 :]:
                if g1 & groups.get(n2, none):
                    continue
                if may_overlap(t1, t2):
                    raise RuntimeError(
                        f"fusion_alias: region {spec.name} was compiled assuming its inputs {n1} and {n2} "
                        f"do not share memory, but at run time they overlap ({n1}: {_layout(t1)}; "
                        f"{n2}: {_layout(t2)}, same storage). Running it would let nvFuser race or read "
                        "stale values. Call through fusion_alias.jit (it recompiles per alias structure), "
                        "or do not re-point tensors (set_(), as_strided) between calls."
                    )


# ---------------------------------------------------------------------------
# The adapter: define_region's calls -> the real nvFuser API
# ---------------------------------------------------------------------------

# Note [what the adapter translates]
# ----------------------------------
# Checked against nvfuser_direct 0.2.36 (nvfuser-cu130-torch210), by building
# every region of the seeds, the bench and a fuzz sample on CPU
# (scripts/check_nvfuser_definitions.sh). Its signatures are
#   define_tensor(shape, contiguity, dtype, is_cpu, stride_order)
#   define_scalar(dtype) | define_scalar(value, dtype)
#   add_output(output) | add_output(output, alias_input)
#   ops.broadcast_in_dim(arg, shape, broadcast_dims), ops.reshape(arg, new_shape),
#   ops.slice(arg, start_indices, end_indices, strides), ops.squeeze(arg, dims),
#   ops.permute(arg, dims), ops.sum/max/min/prod(arg, dims, keepdim, dtype),
#   ops.full(shape, fill_value, dtype), ops.cast(arg, dtype), ops.where(p, a, b)
#   execute(inputs, *, device, save_repro_inputs, _enable_options, _disable_options)
# and the lowering's keyword names match them. What differs:
# 1. define_tensor: the lowering says every input is contiguous and gives no
#    stride_order. nvFuser checks both against the real tensor at execute, so
#    the adapter passes the actual shape, contiguity and stride order
#    (nvfuser_direct.compute_tensor_descriptor, as Thunder does) and is_cpu.
# 2. add_output(v, alias_input=d): written as add_output(set(cast(v, dtype(d))), d),
#    like Thunder's copy_ translation: the aliased value must be a fresh value
#    (hidden from execute's results, not a fusion input, not also a plain
#    output) and must have the destination's dtype. nvFuser's frontend accepts
#    a dtype or rank mismatch here and fails only at execute, so the adapter
#    checks both itself (:func:`_check_write_back`) where the values say them.
#    For example ``a.exp_()`` on a float32 ``a`` of shape (5, 5):
#        tv0 = fd.define_tensor(shape=[5, 5], contiguity=[True, True], dtype=DataType.Float, ...)
#        tv1 = fd.ops.exp(tv0)
#        tv2 = fd.ops.cast(tv1, dtype=DataType.Float)   # the cast; set() prints as a cast too
#        fd.add_output(tv2, tv0)
# 3. Reductions (and squeeze) with empty dims: nvFuser rejects or mis-handles
#    them; Thunder returns the argument. The adapter emits set(arg).
# 4. where: nvFuser may promote Python-number branches to Double (NVIDIA/Fuser#3816);
#    Thunder casts the result to the trace's dtype, and so does the adapter.
# 5. slice with a step other than 1: nvFuser does not support it (Thunder's own
#    checker refuses it). NvFuserFusion does not send such a region to nvFuser
#    at all (see ``unsupported_reason``).
# Arguments other than the op's operand are passed positionally, in the order
# above, so that a renamed keyword in another nvFuser release cannot silently bind wrong.


class NvFuserAdapter:
    """Wraps a real (or recording) FusionDefinition; ``define_region`` drives it.

    ``layouts``: for each tensor input in definition order, ``(shape,
    contiguity, stride_order, is_cpu)`` of the actual argument.
    ``where_dtypes``: DataType of each ``where`` result, in trace order.
    """

    def __init__(self, fd, layouts: Sequence[tuple], DataType, where_dtypes: Sequence = (), defer_writebacks: bool = False):
        self.fd = fd
        self.DataType = DataType
        self._layouts = list(layouts)
        self._next_layout = 0
        self._tensor_inputs: list[tuple] = []  # (value, DataType, shape) of each tensor input
        self.ops = _OpsAdapter(self, list(where_dtypes))
        self.plain_outputs = 0
        self.aliased_outputs = 0
        # Note [write-backs into strided inputs]: (tensor-input ordinal, value) of each write-back
        # returned as a plain output and copied by torch after execute
        self.defer_writebacks = defer_writebacks
        self.deferred: list[tuple[int, object]] = []

    def define_tensor(self, shape, contiguity=None, dtype=None, is_cpu=False, **_ignored):
        if self._next_layout >= len(self._layouts):
            raise RuntimeError("fusion_alias: the region defines more tensor inputs than it was called with")
        real_shape, real_contiguity, stride_order, real_is_cpu = self._layouts[self._next_layout]
        self._next_layout += 1
        if len(real_shape) != len(shape):
            raise RuntimeError(
                f"fusion_alias: input rank mismatch: the trace says {list(shape)}, the argument has {list(real_shape)}"
            )
        t = self.fd.define_tensor(
            shape=list(real_shape),
            contiguity=list(real_contiguity),
            dtype=dtype,
            is_cpu=bool(real_is_cpu),
            stride_order=list(stride_order),
        )
        # nvfuser_direct's values have no stable index: the input itself is the key
        self._tensor_inputs.append((t, dtype, list(real_shape)))
        return t

    def define_scalar(self, *args, dtype=None):
        if args:
            return self.fd.define_scalar(args[0], dtype)
        return self.fd.define_scalar(dtype)

    def add_output(self, value, alias_input=None):
        if alias_input is None:
            self.plain_outputs += 1
            return self.fd.add_output(value)
        ordinal = next((i for i, t in enumerate(self._tensor_inputs) if t[0] is alias_input), None)
        if ordinal is None:
            raise RuntimeError("fusion_alias: a write-back must target a tensor input of the region")
        _, dtype, shape = self._tensor_inputs[ordinal]
        value = self.fd.ops.cast(value, dtype)
        if _expanded(value):  # Note [write-backs of broadcast values]
            zeros = self.fd.ops.full(list(shape), self.fd.define_scalar(0, self.DataType.Int), dtype)
            value = self.fd.ops.where(self.fd.define_scalar(True, self.DataType.Bool), value, zeros)
        written = self.fd.ops.set(value)
        _check_write_back(written, alias_input, dtype, len(shape))
        if self.defer_writebacks:
            self.deferred.append((ordinal, written))
            return None
        self.aliased_outputs += 1
        return self.fd.add_output(written, alias_input)

    def finish(self) -> None:
        """Add the deferred write-backs as the last plain outputs (Note [write-backs into strided inputs])."""
        for _, value in self.deferred:
            self.fd.add_output(value)


# Note [write-backs of broadcast values]
# ---------------------------------------
# nvFuser's add_output(value, alias_input) replays the input's allocation domain
# onto the value, and that replay fails with an internal assert
# (transform_replay.cpp) when the value has an expanded broadcast dimension:
# ``x.copy_(row)`` of a (4, 3) x and a (3,) row, ``x[0, 1:3] = s`` of a 0-d s,
# found by the CPU definitions check on fuzz programs. Such a value is made
# concrete first: ``where(True, value, full(shape of x, 0))`` has the full's
# iteration domains and the value's elements (a select: exact for every dtype,
# no arithmetic on the value, no read of x):
#     tv3 = fd.ops.expand(fd.ops.broadcast(tv0, ...), shape=[1, 3])   # 0-d -> [1, 3]
#     tv4 = fd.ops.full(shape=[1, 3], fill_value=0, dtype=DataType.Float)
#     tv5 = fd.ops.where(True, tv3, tv4)
#     fd.add_output(tv5, tv1)
# Only values with an expanded dimension get it, read from nvFuser's own
# printout of the logical domain (``bS5{1 ex 3}``); a stand-in without one gets none.


def _expanded(value) -> bool:
    """Whether an nvFuser value has an expanded broadcast dimension (``{1 ex N}`` in its domain)."""
    domain = getattr(value, "get_logical_domain", None)
    if not callable(domain):
        return False
    return any(" ex " in str(d) for d in domain())


def _check_write_back(written, dst, dtype, rank) -> None:
    """The written value must have the destination's dtype and rank (nvFuser checks only at execute)."""
    got_dtype = written.dtype() if callable(getattr(written, "dtype", None)) else None
    if got_dtype is not None and got_dtype != dtype:
        raise RuntimeError(f"fusion_alias: write-back of dtype {got_dtype} into an input of dtype {dtype}")
    got_rank = getattr(written, "ndim", None)
    if isinstance(got_rank, int) and got_rank != rank:
        raise RuntimeError(f"fusion_alias: write-back of rank {got_rank} into an input of rank {rank}")


_REDUCTIONS = frozenset({"sum", "max", "min", "prod"})


class _OpsAdapter:
    def __init__(self, owner: NvFuserAdapter, where_dtypes: list):
        self._owner = owner
        self._where_dtypes = where_dtypes

    @property
    def _ops(self):
        return self._owner.fd.ops

    def __getattr__(self, name):
        ops = self._owner.fd.ops
        if name == "cast":
            return lambda arg, dtype: ops.cast(arg, dtype)
        if name == "where":
            return self._where
        if name == "broadcast_in_dim":
            return lambda arg, shape, broadcast_dims: ops.broadcast_in_dim(arg, list(shape), list(broadcast_dims))
        if name == "reshape":
            return lambda arg, new_shape: ops.reshape(arg, list(new_shape))
        if name == "slice":
            return self._slice
        if name == "squeeze":
            return lambda arg, dims: ops.squeeze(arg, list(dims)) if len(dims) else ops.set(arg)
        if name == "permute":
            return lambda arg, dims: ops.permute(arg, list(dims))
        if name in _REDUCTIONS:

            def reduce(arg, dims, keepdim=False):
                if not len(dims):
                    return ops.set(arg)
                if name in ("sum", "prod") and callable(getattr(arg, "dtype", None)) and str(arg.dtype()).endswith(
                        ("Int32", "Int16", "Int8", "UInt8", "Byte", "Char", "Short")):
                    # (ops.py, Note [the dtype of an integer sum]: nvFuser's is int64 unless told; a bool count stays so)
                    return getattr(ops, name)(arg, list(dims), bool(keepdim), arg.dtype())
                return getattr(ops, name)(arg, list(dims), bool(keepdim))

            return reduce
        if name == "full":
            return lambda shape, fill_value, dtype: ops.full(list(shape), fill_value, dtype)
        if name == "pad":
            return lambda arg, pad_widths, value=None: ops.pad(arg, list(pad_widths), value)
        return getattr(ops, name)  # elementwise: same name, positional arguments

    def _where(self, pred, a, b):
        out = self._ops.where(pred, a, b)
        if self._where_dtypes:
            dtype = self._where_dtypes.pop(0)
            if dtype is not None:
                out = self._ops.cast(out, dtype)
        return out

    def _slice(self, arg, start_indices, end_indices, strides=None):
        strides = [1] * len(start_indices) if strides is None else list(strides)
        if any(s != 1 for s in strides):
            raise NotImplementedError("fusion_alias: nvFuser's slice supports step 1 only")
        return self._ops.slice(arg, list(start_indices), list(end_indices), strides)


def where_dtypes(spec, DataType) -> list:
    """DataType of each ``where`` result of the region, in trace order (None for numbers)."""
    from thunder.core import dtypes
    from thunder.core.proxies import TensorProxy

    from fusion_alias import ops
    from fusion_alias.lowering import datatype

    out = []
    for b in spec.bsyms:
        if b.sym.id is ops.PrimIDs.WHERE:
            o = b.output
            out.append(datatype(DataType, dtypes.to_strong_dtype(o.dtype)) if isinstance(o, TensorProxy) else None)
    return out


def unsupported_reason(spec) -> str | None:
    """Why nvFuser cannot take this region as it is, or None."""
    from fusion_alias import ops

    for b in spec.bsyms:
        if b.sym.id is ops.PrimIDs.SLICE and len(b.args) > 3 and b.args[3] is not None:
            if any(s != 1 for s in b.args[3]):
                return f"{b.output.name} = slice with steps {list(b.args[3])} (nvFuser slices with step 1 only)"
    return None


def nothing_to_run(spec) -> bool:
    """A region with no write-back and no plain output: every result is a view of an input.

    nvFuser refuses such a definition ("Fusion is empty!" at execute); the wrapper
    runs nothing and replays the views (found by the CPU definitions check: a fuzz
    region ``t0 = b * 0.5; t0.add_(-1.5); return c.unsqueeze(0)`` whose only live
    result is the view).
    """
    from fusion_alias.lowering import emitted_outputs

    return not spec.writebacks and not emitted_outputs(spec)


def only_copies(spec) -> bool:
    """Note [a region of copies runs on torch]
    ------------------------------------------
    A region whose every symbol is a ``copy_`` (or a view naming its source or destination), as a
    KV-cache update ``cache[:, pos:pos + 1].copy_(k)`` makes, computes nothing: nvFuser would launch
    a kernel that moves the elements, and for a destination that is not row-major dense, where the
    write-back is deferred (nvfuser_writebacks.py), a torch ``copy_`` after it moved them again (on
    the H200 in session 28: 0.23 ms against eager's 0.04 ms for the decode step). Such a region runs
    as the compiled torch function instead (backends/compiled.py): one ``copy_`` per write-back, the
    kernel eager launches, in the region's order and with its reads-first semantics."""
    from fusion_alias import ops

    bsyms = spec.bsyms
    return bool(spec.writebacks) and all(ops.is_copy(b) or ops.is_view(b) for b in bsyms)


def _contiguous_layout(p) -> tuple:
    shape = [int(s) for s in p.shape]
    contiguity = [None if s == 1 else True for s in shape]
    return shape, contiguity, list(range(len(shape) - 1, -1, -1)), p.device.type == "cpu"


def preview_source(spec, layouts: Sequence[tuple] | None = None) -> str:
    """The adapter's calls for ``spec``, printed in nvFuser syntax (no nvFuser needed).

    Without ``layouts`` every tensor input is taken as contiguous.
    """
    from thunder.core.proxies import TensorProxy

    from fusion_alias.backends.nvfuser_writebacks import defers_writebacks
    from fusion_alias.lowering import RecordedDataType, RecordingFusionDefinition, define_region

    if layouts is None:
        layouts = [_contiguous_layout(p) for p in spec.inputs if isinstance(p, TensorProxy)]
    rec = RecordingFusionDefinition()
    adapter = NvFuserAdapter(rec, layouts, RecordedDataType, where_dtypes(spec, RecordedDataType), defers_writebacks(spec, layouts))
    define_region(adapter, spec, RecordedDataType)
    adapter.finish()
    return rec.to_source(spec.name)


def error_line(e: BaseException) -> str:
    """The first line of an error's message, without nvFuser's C++ backtrace ("Exception raised from ...")."""
    text = str(e).strip()
    return text.split("\nException raised from")[0].strip().splitlines()[0][:300] if text else ""


def _definition_text(fd) -> str:
    """nvFuser's own printout of a built definition."""
    for get in (repr, str):
        try:
            text = get(fd)
        except Exception:
            continue
        if text and "object at 0x" not in text:
            return text.rstrip("\n")
    return f"# (nvFuser did not print definition {fd!r})"


# ---------------------------------------------------------------------------
# The callable region
# ---------------------------------------------------------------------------


class _Built:
    __slots__ = ("fd", "plain_outputs", "aliased_outputs", "deferred")

    def __init__(self, fd, plain_outputs: int, aliased_outputs: int, deferred: Sequence[int] = ()):
        self.fd = fd
        self.plain_outputs = plain_outputs
        self.aliased_outputs = aliased_outputs
        self.deferred = tuple(deferred)  # tensor-input ordinal of each write-back the wrapper copies


def layouts_of(nv, fed_args: Sequence) -> list[tuple]:
    """``(shape, contiguity, stride_order, is_cpu)`` of each tensor argument, as nvFuser describes it."""
    layouts = []
    for a in fed_args:
        if isinstance(a, torch.Tensor):
            contiguity, stride_order = nv.compute_tensor_descriptor(tuple(a.shape), tuple(a.stride()))
            layouts.append((tuple(a.shape), list(contiguity), list(stride_order), a.device.type == "cpu"))
    return layouts


def build_definition(nv, spec, layouts: Sequence[tuple], where: Sequence | None = None) -> _Built:
    """The region's real nvFuser definition for inputs of these layouts (built, not executed).

    ``nv`` is the ``nvfuser_direct`` module (or a stand-in with its API). The
    backend calls this at a region's first call per input layout; the CPU
    definitions check (``fusion_alias.nvfuser_check``) calls it for every
    region of its programs. Raises whatever nvFuser's frontend raises.
    """
    from fusion_alias.backends.nvfuser_writebacks import defers_writebacks
    from fusion_alias.lowering import define_region

    where = where_dtypes(spec, nv.DataType) if where is None else where
    fd = nv.FusionDefinition()
    with fd:
        adapter = NvFuserAdapter(fd, layouts, nv.DataType, list(where), defers_writebacks(spec, layouts))
        define_region(adapter, spec, nv.DataType)
        adapter.finish()
    return _Built(fd, adapter.plain_outputs, adapter.aliased_outputs, [k for k, _ in adapter.deferred])


#: Thunder's nvFuser compile options that the wrapper honours (Note [Thunder's wrapper interface]).
_COMPILE_OPTIONS = {
    "nv_store_fusion_inputs": "Allow nvFuser to store fusion inputs for repro.",
    "nv_save_fake_inputs": "Allow nvFuser to store fake tensor inputs for repro.",
    "nv_enable_options": "List of NVFUSER_ENABLE options to set.",
    "nv_disable_options": "List of NVFUSER_DISABLE options to set.",
    "nv_skip_cache": "Skip cache for nvFuser fusions.",
}


def _compile_options() -> dict:
    """Thunder's nvFuser compile options of the compilation running now (empty outside one)."""
    from thunder.core.compile_data import get_compile_option

    try:
        return {k: get_compile_option(k, why) for k, why in _COMPILE_OPTIONS.items()}
    except Exception:  # no compile data (a wrapper built by hand)
        return {}


CacheInfo = collections.namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])


class NvFuserFusion:
    """A fusion region run by nvFuser, with its alias groups in the cache key and a runtime guard.

    It has the interface of Thunder's ``FusionDefinitionWrapper`` (Note [Thunder's wrapper interface]).
    """

    #: built definitions kept per region (one per input layout and aliasing)
    MAX_DEFINITIONS = 64
    #: the arguments of the last call, kept with Thunder's nv_store_fusion_inputs option
    last_inputs = None

    def __init__(self, spec):
        require()
        from thunder.core.dtypes import to_torch_dtype
        from thunder.core.proxies import NumberProxy, TensorProxy

        from fusion_alias.lowering import emitted_outputs

        self.spec = spec
        self.name = spec.name
        self._nv = _nvfuser()
        self._groups = _groups_by_name(spec)
        self._emitted = emitted_outputs(spec)
        self._fed = [i for i, p in enumerate(spec.inputs) if isinstance(p, (TensorProxy, NumberProxy))]
        self._all_fed = len(self._fed) == len(spec.inputs)
        # position in the fed arguments of each tensor input (a deferred write-back names its destination by
        # tensor-input ordinal: Note [write-backs into strided inputs])
        self._fed_tensors = [k for k, i in enumerate(self._fed) if isinstance(spec.inputs[i], TensorProxy)]
        by_name = {p.name: p for p in list(spec.outputs) + list(spec.extra_outputs)}
        self._expected = []
        for name in self._emitted:
            p = by_name.get(name)
            if isinstance(p, TensorProxy):
                self._expected.append((tuple(int(s) for s in p.shape), to_torch_dtype(p.dtype)))
            else:
                self._expected.append(None)
        self._device = _explicit_device(spec)
        self._where = where_dtypes(spec, self._nv.DataType)
        self._defs: dict[tuple, _Built] = {}
        self._last: _Built | None = None
        self._hits = self._misses = 0
        options = _compile_options()
        self.use_cache = not options.get("nv_skip_cache")
        self.store_inputs = bool(options.get("nv_store_fusion_inputs"))
        self.save_fake_inputs = bool(options.get("nv_save_fake_inputs"))
        self.enable_options = list(options.get("nv_enable_options") or [])
        self.disable_options = list(options.get("nv_disable_options") or [])
        self._nothing = nothing_to_run(spec)
        self.fallback_reason = unsupported_reason(spec)
        self._fallback = None
        self._torch = None
        self.on_torch: dict[tuple, str] = {}  # cache key -> why torch runs it (Note [nvFuser errors fall back to torch])
        if self.fallback_reason is not None:
            from fusion_alias.backends.reference import ReferenceFusion

            # Correct, unfused: torch runs the region with nvFuser's semantics (reads-first).
            self._fallback = ReferenceFusion(spec, "reads-first")
        elif only_copies(spec):  # Note [a region of copies runs on torch]
            from fusion_alias.backends.compiled import CompiledFusion

            self.fallback_reason = "only copies: torch's copy_ is the one kernel nvFuser would launch"
            self._fallback = CompiledFusion(spec)

    # -- definitions ----------------------------------------------------------
    def _build(self, fed_args: list) -> _Built:
        built = build_definition(self._nv, self.spec, layouts_of(self._nv, fed_args), self._where)
        if built.plain_outputs != len(self._emitted):
            raise RuntimeError(
                f"fusion_alias: {self.name}: the definition added {built.plain_outputs} plain outputs, "
                f"the plan expects {len(self._emitted)} ({self._emitted})"
            )
        return built

    def cache_keys(self) -> list[tuple]:
        """Keys of the definitions built so far (see :func:`cache_key`)."""
        return list(self._defs)

    def cache_info(self) -> CacheInfo:
        """Hits and misses of the definition cache, like ``functools.lru_cache``'s (and Thunder's wrapper's)."""
        return CacheInfo(self._hits, self._misses, self.MAX_DEFINITIONS, len(self._defs))

    def cache_clear(self) -> None:
        self._defs.clear()
        self.on_torch.clear()
        self._hits = self._misses = 0

    @property
    def last_used(self):
        """The nvFuser definition run last (None before the first call), as on Thunder's wrapper."""
        return None if self._last is None else self._last.fd

    # -- running --------------------------------------------------------------
    def __call__(self, *args):
        try:
            return self._run(args)
        except RuntimeError as e:
            from fusion_alias.region_plan import explain_inconsistent_trace

            explain_inconsistent_trace(self.spec, e)  # (Note [Thunder's wrong 0-d gradients])
            raise

    def _run(self, args):
        from fusion_alias.lowering import assemble_outputs

        spec = self.spec
        check_aliasing(spec, args, self._groups)
        if self._fallback is not None:
            return self._fallback(*args)
        if self._nothing:
            return assemble_outputs(spec, {p.name: a for p, a in zip(spec.inputs, args)}, [])
        if not _nvfuser_can_take(args):
            return self._torch_region()(*args)
        fed = list(args) if self._all_fed else [args[i] for i in self._fed]
        key = cache_key(spec, args)
        if key in self.on_torch:  # Note [nvFuser errors fall back to torch]
            return self._torch_region()(*args)
        built = self._defs.get(key) if self.use_cache else None
        if built is None:
            self._misses += 1
            try:
                built = self._build(fed)
            except Exception as e:  # noqa: BLE001 - nothing ran yet
                if str(e).startswith("fusion_alias:"):  # our own consistency checks stay loud
                    raise
                return self._to_torch(key, "building", e, args)
            if len(self._defs) >= self.MAX_DEFINITIONS:
                self._defs.pop(next(iter(self._defs)))
            self._defs[key] = built
        else:
            self._hits += 1
        self._last = built
        if self.store_inputs:
            self.last_inputs = fed
        try:
            outs = built.fd.execute(fed, device=self._device, **self._execute_options())
        except Exception as e:  # noqa: BLE001
            if built.aliased_outputs:  # an in-kernel write may have landed: running again is not safe
                raise
            return self._to_torch(key, "running", e, args)
        n, m = built.plain_outputs, len(built.deferred)
        if len(outs) not in (n + m, n + m + built.aliased_outputs):
            raise RuntimeError(
                f"fusion_alias: {self.name}: nvFuser returned {len(outs)} outputs, expected {n + m} "
                f"(or {n + m + built.aliased_outputs} with the write-backs)"
            )
        tail = list(outs[len(outs) - n - m :]) if n + m else []
        emitted = tail[:n]
        if m:  # Note [write-backs into strided inputs]: torch writes them, in program order
            fed_tensors = self._fed_tensors
            for k, value in zip(built.deferred, tail[n:]):
                fed[fed_tensors[k]].copy_(value)
        for i, (v, want) in enumerate(zip(emitted, self._expected)):
            if want is None or not isinstance(v, torch.Tensor):
                continue
            shape, dtype = want
            if tuple(v.shape) != shape:
                raise RuntimeError(
                    f"fusion_alias: {self.name}: nvFuser output {self._emitted[i]} has shape "
                    f"{tuple(v.shape)}, the trace says {shape}"
                )
            if v.dtype != dtype:
                emitted[i] = v.to(dtype)
        inputs = {p.name: a for p, a in zip(spec.inputs, args)}
        return assemble_outputs(spec, inputs, emitted)

    def _execute_options(self) -> dict:
        """Keyword arguments of ``execute`` from Thunder's compile options (none by default)."""
        options = {}
        if self.save_fake_inputs:
            options["save_repro_inputs"] = True
        if self.enable_options:
            options["_enable_options"] = self.enable_options
        if self.disable_options:
            options["_disable_options"] = self.disable_options
        return options

    def _to_torch(self, key, stage: str, error: BaseException, args):
        """Note [nvFuser errors fall back to torch]
        -------------------------------------------
        nvFuser can refuse a definition it built (an internal assert while scheduling:
        ``loop_promotion.cpp``, fuzz seed 20827 #72 on an H200). Where nothing was written
        yet (the failure came while building, or while running a definition with no
        in-kernel write-back, whose inputs nvFuser only reads), the region runs on torch
        instead, reads first, for these inputs from now on, with a warning that names the
        error; ``on_torch`` holds why, by cache key. A failure after an in-kernel write
        may have landed raises, as Thunder's wrapper does.
        """
        reason = f"nvFuser failed {stage} {self.name}: {type(error).__name__}: {error_line(error)}"
        self.on_torch[key] = reason
        warnings.warn(f"fusion_alias: {reason}; torch runs this region for these inputs (correct, unfused)", stacklevel=3)
        return self._torch_region()(*args)

    def _torch_region(self):
        """The region on torch, for a call nvFuser cannot take (a CPU tensor that is not 0-d)."""
        if self._torch is None:
            from fusion_alias.backends.reference import ReferenceFusion

            self._torch = ReferenceFusion(self.spec, "reads-first")
        return self._torch

    def __repr__(self):
        from fusion_alias.backends.reference import describe

        if self._fallback is not None:
            source = (
                f"# not sent to nvFuser: {self.fallback_reason}; torch runs this region "
                f"({'compiled' if hasattr(self._fallback, 'source') else 'reference'} backend, reads-first)\n"
                + self._fallback.fd.to_source(self.name)
            )
        elif self._nothing:
            source = "# nothing for nvFuser to run: no write-back and no fresh output (every result is a view of an input)"
        elif self._last is None:
            source = (
                "# nvFuser definition not built yet (one is built per input layout at the first call);\n"
                "# the calls it will make, for contiguous inputs:\n" + preview_source(self.spec)
            )
        else:
            source = _definition_text(self._last.fd)
        return describe(self.spec, source)


def _nvfuser_can_take(args) -> bool:
    """nvFuser takes CUDA tensors, 0-d CPU tensors and Python numbers; not a ZeroTensor (no storage: ``lowering.
    assemble_outputs``), which torch's regions take."""
    for a in args:
        if isinstance(a, torch.Tensor) and (not a.is_cuda and not (a.is_cpu and a.dim() == 0) or a._is_zerotensor()):
            return False
    return True


def _explicit_device(spec):
    """The CUDA device index to pass to ``execute`` when no tensor input says where to run."""
    from thunder.core.proxies import TensorProxy

    from fusion_alias import ops

    if any(isinstance(p, TensorProxy) for p in spec.inputs):
        return None
    for b in spec.bsyms:
        if b.sym.id is ops.PrimIDs.FULL:
            dev = b.kwargs.get("device")
            index = getattr(dev, "index", None)
            if index is not None:
                return int(index)
    return None
