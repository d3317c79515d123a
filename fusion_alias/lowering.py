"""Lowering: a fusion region → calls on an nvFuser ``FusionDefinition``.

``define_region(fd, spec, DataType)`` drives any object with nvFuser's Python
API (``define_tensor``, ``define_scalar``, ``fd.ops.*``, ``add_output(value,
alias_input=...)``). On CUDA that object is a real ``nvfuser.FusionDefinition``;
on any machine it is :class:`RecordingFusionDefinition`, which records the
calls, prints them in nvFuser's syntax and lets the reference backend execute
them with torch. Both backends therefore run the very same definition.

The region's :class:`RegionSpec` says what the definition cannot: which
inputs share memory (alias groups), which writes are coalesced, and how each
output is produced (a fusion output, the written destination buffer itself,
or a view of an input made after the fusion ran).

Note [three kinds of region outputs]
------------------------------------
* ``fresh``: an SSA value of the fusion, ``fd.add_output(v)``.
* ``view``: a chain of view prims from a region input. Eager PyTorch returns a
  view of the input; so does the wrapper, replaying the chain with torch view
  ops on the input tensor after the fusion ran (nvFuser would return a view
  too, through its own alias analysis). The result of ``copy_(v, d)`` with
  ``d`` a region input is the empty chain: after the region it must *be* ``d``'s
  buffer (aliasing.py, Note [copy_ results keep their memory]), whose bytes the
  write-back ``fd.add_output(v, alias_input=d)`` updated.
* ``final``: a write into a tensor the region itself created
  (``c = a * 2; c.add_(1)``) needs no write-back: ``c``'s final value is one
  fresh output, and ``c`` and every ``copy_`` result into it are that tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from thunder.core.proxies import NumberProxy, Proxy, TensorProxy
from thunder.core.symbol import BoundSymbol
import thunder.core.dtypes as dtypes

from fusion_alias import ops
from fusion_alias.aliasing import proxy_args, proxy_outs


@dataclass
class RegionSpec:
    """Everything needed to define and run one region."""

    name: str
    inputs: list[Proxy]
    outputs: list[Proxy]
    bsyms: list[BoundSymbol]
    alias_groups: list[list[str]]  # region input names that may share memory (≥2 each)
    writebacks: list[int] = field(default_factory=list)  # indices of copy_ bsyms written back
    writeback_dst: dict[int, str] = field(default_factory=dict)  # ... and the input each lands in
    output_kind: dict[str, str] = field(default_factory=dict)  # name -> fresh|dst|view
    view_chain: dict[str, tuple[str, list[BoundSymbol]]] = field(default_factory=dict)
    final_src: dict[str, Proxy] = field(default_factory=dict)  # "final" outputs -> value
    extra_outputs: list[Proxy] = field(default_factory=list)  # bases of views, not trace outputs
    final_dst: dict[str, str] = field(default_factory=dict)  # "final" outputs -> the tensor written


class TraceShapeError(RuntimeError):
    """A trace Thunder made is inconsistent with itself (a wrong gradient), so a region cannot run it."""


# Note [Thunder's wrong 0-d gradients]
# ------------------------------------
# For ``a * b.sum()`` with ``a`` and ``b`` requiring grad, Thunder 0.2.6's backward
# computes the gradient of the 0-d ``b.sum()`` as ``mul(a, g)`` of ``a``'s shape and
# never reduces it: its trace then says ``broadcast_in_dim(t13, (3,), ())``, a
# 1-d tensor broadcast as if it were 0-d. Thunder's torch executor expands it
# anyway and plain ``thunder.jit`` returns a wrong ``b.grad`` without an error
# (checked). A region refuses such a trace when it is built, naming the bug.


_BROADCAST_IN_DIM = ops.PrimIDs.BROADCAST_IN_DIM


def _check_trace_consistency(name: str, b: BoundSymbol) -> None:
    """Raise ``TraceShapeError`` where ``b``, a ``broadcast_in_dim`` of region ``name``, broadcasts
    a tensor with dimensions its shape does not have (Note [Thunder's wrong 0-d gradients])."""
    if isinstance(b.args[0], TensorProxy):
        have, dims = tuple(b.args[0].shape), tuple(b.args[2])
        if len(have) != len(dims):
            raise TraceShapeError(
                f"fusion_alias: Thunder's trace broadcasts {b.args[0].name} of shape {have} with broadcast "
                f"dimensions {dims} (region {name}): Thunder 0.2.6 computed a wrong gradient for a 0-d "
                "intermediate used with a tensor (e.g. a * b.sum() with both requiring grad); plain "
                "thunder.jit returns that wrong gradient without an error. Workaround: keep the reduced "
                "dimension (b.sum(0, keepdim=True) or b.sum().reshape(1))"
            )


def plan_region(
    name: str,
    bsyms: Sequence[BoundSymbol],
    inputs: Sequence[Proxy],
    outputs: Sequence[Proxy],
    alias_groups: Sequence[Sequence[str]],
    view_key=None,
) -> RegionSpec:
    """Decide write-backs and output kinds.

    ``view_key(name)`` identifies the view of memory a destination names (from
    the global alias analysis: equal keys, same elements); without it each
    name is its own view, and only writes to the same name are coalesced.
    Raises ``TraceShapeError`` where the trace is inconsistent with itself.
    """
    copy_id = ops.COPY_ID
    copies: list[int] = []
    for i, b in enumerate(bsyms):  # (nothing else below raises: the check raises as one made first would)
        sym_id = b.sym.id
        if sym_id is copy_id:
            copies.append(i)
        elif sym_id is _BROADCAST_IN_DIM:
            _check_trace_consistency(name, b)
    input_names = {p._name for p in inputs}  # (aliasing.py, Note [proxy names read directly])
    produced_by = None  # name -> the symbol of the region making it (``_producers``), made when first needed
    if copies:
        writebacks, writeback_dst, internal_final, produced_by = _plan_writes(
            bsyms, copies, view_key or _own_name, input_names
        )
    else:
        writebacks, writeback_dst, internal_final = [], {}, {}
    # (its fields in order: keyword arguments cost a dict per call, and there is a call per region)
    spec = RegionSpec(
        name,
        list(inputs),
        list(outputs),
        list(bsyms),
        [list(g) for g in alias_groups] if alias_groups else [],
        writebacks,
        writeback_dst,
        {},  # output_kind, view_chain, final_src, extra_outputs, final_dst: _plan_outputs fills them
        {},
        {},
        [],
        {},
    )
    if outputs:
        if produced_by is None:
            produced_by = _producers(bsyms)
        _plan_outputs(spec, input_names, produced_by, internal_final)
    return spec


def _own_name(name: str) -> str:
    return name


def _producers(bsyms) -> dict[str, BoundSymbol]:
    produced_by = {}
    for b in bsyms:
        for o in proxy_outs(b):  # (proxies only)
            produced_by[o.name] = b
    return produced_by


def _plan_writes(bsyms, copies: list[int], view_key, input_names: set):
    """The copy_ symbols written back (their indices), the input each lands in, and the
    last value written into each destination the region made itself; and the region's
    producers (``_producers``) where they were needed, else None.

    Such a destination gets no write-back: its final value becomes a fresh output that
    both the destination's name and the copy_ results stand for.
    """
    if len(copies) == 1:  # (no later write to cover it)
        kept = copies
        d = bsyms[copies[0]].args[1]._name
        if d in input_names:  # (the common case of a large trace: one write, into an input)
            return copies, {copies[0]: d}, {}, None
    else:
        kept = _uncovered_writes(bsyms, copies, view_key)
    produced_by = None
    internal_final: dict[str, Proxy] = {}
    dst_of: dict[int, str] = {}
    for i in copies:
        d = bsyms[i].args[1]._name
        if d not in input_names:
            if produced_by is None:
                produced_by = _producers(bsyms)
            d = _dst_base(d, input_names, produced_by)
            if d not in input_names:
                internal_final[d] = bsyms[i].args[0]
        dst_of[i] = d
    writebacks: list[int] = []
    writeback_dst: dict[int, str] = {}
    for i in kept:
        d = dst_of[i]
        if d in input_names:
            writebacks.append(i)
            writeback_dst[i] = d
    return writebacks, writeback_dst, internal_final, produced_by


def _uncovered_writes(bsyms, copies: list[int], view_key) -> list[int]:
    """Coalesce (Note [one write-back per memory]): a write is dropped when a later
    write of the region covers it."""
    kept = []
    later_views: set = set()
    later_wholes: set = set()  # roots that a later write overwrites whole
    for i in reversed(copies):
        key = view_key(bsyms[i].args[1].name)
        if key not in later_views and not _covered_by_whole(key, later_wholes):
            kept.append(i)
        later_views.add(key)
        if _is_whole_key(key):
            later_wholes.add(key[0])
    kept.reverse()
    return kept


def _dst_base(name: str, input_names: set, produced_by: dict) -> str:
    """The tensor a write into ``name`` lands in: ``x.add_(1).mul_(2)`` writes into the
    first copy_'s result, and that is x's memory."""
    while name not in input_names and name in produced_by and ops.is_copy(produced_by[name]):
        name = produced_by[name].args[1].name
    return name


def _memory_base(name: str, input_names: set, produced_by: dict) -> tuple[str, list[BoundSymbol]]:
    """The tensor whose memory ``name`` names, and the view prims from it to ``name``."""
    steps = []
    while name not in input_names:
        b = produced_by.get(name)
        if b is not None and ops.is_view(b):
            steps.append(b)
            name = b.args[0].name
        elif b is not None and ops.is_copy(b):
            name = b.args[1].name  # a copy_ result is its destination's memory
        else:
            break
    return name, list(reversed(steps))


def _plan_outputs(spec: RegionSpec, input_names: set, produced_by: dict, internal_final: dict) -> None:
    """Fill in ``spec``'s output kinds, view chains, "final" values and extra outputs."""
    kinds, chains = spec.output_kind, spec.view_chain
    output_names = {o.name for o in spec.outputs}

    def materialize(name: str, proxy: Proxy | None) -> None:
        if name in internal_final:
            kinds[name], spec.final_src[name] = "final", internal_final[name]
            spec.final_dst[name] = name
        else:
            kinds[name] = "fresh"
        if name not in output_names and proxy is not None:
            spec.extra_outputs.append(proxy)

    for o in spec.outputs:
        if not isinstance(o, TensorProxy):
            kinds[o.name] = "fresh"
            continue
        base, steps = _memory_base(o.name, input_names, produced_by)
        if base == o.name and base not in input_names:
            materialize(base, None)
        else:
            kinds[o.name], chains[o.name] = "view", (base, steps)
            if base not in input_names and base not in kinds:
                materialize(base, _proxy_named(spec.bsyms, base))


# Note [one write-back per memory]
# --------------------------------
# nvFuser does not order the write-backs of one fusion against each other. Two
# ``add_output(v, alias_input=d)`` into overlapping memory therefore land in
# either order. The dependency graph lets two writes of one memory share a region
# only when the later one covers the earlier (graph.py, ``_covers``: the same
# view, or the whole of the same root), so the earlier write-back can always be
# dropped here. Worked example::
#
#     a[0].zero_(); a.copy_(b); return a * 1
#     t3 = copy_(zeros, t7)     # t7 = a[0]: view key (a, (slice, squeeze))
#     t4 = copy_(b, a)          # view key (a, ()): the whole of a covers a[0]
#
# Only ``b -> a`` is written back. Keeping both, the reference schedule
# ``reverse-writes`` lands the zeros last and row 0 comes out 0, not 1.


def _is_whole_key(key) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and key[1] == () and key[0] != "unknown"


def _covered_by_whole(key, wholes: set) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and key[0] != "unknown" and key[0] in wholes


def _proxy_named(bsyms, name):
    for b in bsyms:
        for o in proxy_outs(b):
            if isinstance(o, Proxy) and o.name == name:
                return o
    return None


def emitted_outputs(spec: RegionSpec) -> list[str]:
    """Names whose values ``define_region`` adds as plain fusion outputs, in order."""
    names = []
    for o in list(spec.outputs) + list(spec.extra_outputs):
        # each "final" name is its own memory (a tensor the region made and wrote):
        # two of them written with one value are still two buffers
        if spec.output_kind.get(o.name) in ("fresh", "final") and o.name not in names:
            names.append(o.name)
    return names


def assemble_outputs(spec: RegionSpec, inputs: dict, emitted: Sequence) -> tuple:
    """The region's results from its input tensors and its plain fusion outputs.

    ``emitted`` holds the values of ``emitted_outputs(spec)``, in order. Views
    (and copy_ results) are replayed with torch on the tensor whose memory they
    name, after the fusion ran: an input, or a tensor the region returns.
    """
    import torch

    from fusion_alias.views import replay_view

    input_storages = {t.untyped_storage().data_ptr() for t in inputs.values() if isinstance(t, torch.Tensor)}
    taken: set[int] = set()  # storages already given to an emitted output: one buffer per program tensor
    values: dict[str, object] = {}
    for name, v in zip(emitted_outputs(spec), emitted):
        if isinstance(v, torch.Tensor):
            storage = v.untyped_storage().data_ptr() if v.numel() else None
            if (storage in input_storages or storage in taken or not v.is_contiguous()
                    or torch._debug_has_internal_overlap(v) == 1):
                # fresh: own memory, writable, and contiguous as nvFuser allocates its outputs (a region's
                # snapshot of a transposed input, returned as the value a fresh tensor was overwritten
                # with, kept the input's strides: a later view(8, 2) of it then copied where eager's is
                # a view, and a write through it was lost; fuzz seed 13014 #65)
                v = v.clone(memory_format=torch.contiguous_format)
                storage = v.untyped_storage().data_ptr() if v.numel() else None
            if storage is not None:
                taken.add(storage)
        values[name] = v
    results = []
    for o in spec.outputs:
        if spec.output_kind[o.name] == "view":
            base, steps = spec.view_chain[o.name]
            results.append(replay_view(inputs[base] if base in inputs else values[base], steps))
        else:
            results.append(values[o.name])
    return tuple(results)


_DTYPE_NAMES = {
    dtypes.float32: "Float",
    dtypes.float64: "Double",
    dtypes.float16: "Half",
    dtypes.bfloat16: "BFloat16",
    dtypes.int32: "Int32",
    dtypes.int64: "Int",
    dtypes.bool8: "Bool",
    dtypes.complex64: "ComplexFloat",
    dtypes.complex128: "ComplexDouble",
}


def datatype(DataType, dtype):
    """nvFuser ``DataType`` member for a Thunder dtype (or Python number type)."""
    if dtype in (float,):
        return DataType.Double
    if dtype in (int,):
        return DataType.Int
    if dtype in (bool,):
        return DataType.Bool
    if dtype in (complex,):
        return DataType.ComplexDouble
    try:
        return getattr(DataType, _DTYPE_NAMES[dtypes.to_strong_dtype(dtypes.to_dtype(dtype, true_dtype=True))])
    except KeyError:
        raise NotImplementedError(f"fusion_alias: dtype {dtype} has no nvFuser DataType") from None


def _contiguity(p: TensorProxy):
    return [True] * len(p.shape)


def define_region(fd, spec: RegionSpec, DataType) -> dict[str, object]:
    """Emit ``spec`` on ``fd``. Returns proxy name → fd value for every value defined."""
    env: dict[str, object] = {}

    for p in spec.inputs:
        if isinstance(p, TensorProxy):
            env[p.name] = fd.define_tensor(
                shape=list(p.shape),
                contiguity=_contiguity(p),
                dtype=datatype(DataType, p.dtype),
                is_cpu=p.device.type == "cpu",
            )
        elif isinstance(p, NumberProxy):
            env[p.name] = fd.define_scalar(dtype=datatype(DataType, p.python_type))

    def val(x):
        if isinstance(x, Proxy):
            return env[x.name]
        if isinstance(x, (bool, int, float, complex)):
            return fd.define_scalar(x, dtype=datatype(DataType, type(x)))
        return x

    for b in spec.bsyms:
        info = ops.op_info(b)
        pid = b.sym.id
        a = b.args
        if ops.is_copy(b):
            env[b.output.name] = val(a[0])
            continue
        if info.kind == "elementwise" and pid is ops.PrimIDs.CONVERT_ELEMENT_TYPE:
            out = fd.ops.cast(val(a[0]), dtype=datatype(DataType, a[1]))
        elif info.kind == "elementwise":
            out = getattr(fd.ops, info.nv_name)(*(val(x) for x in a))
        elif pid is ops.PrimIDs.BROADCAST_IN_DIM:
            out = fd.ops.broadcast_in_dim(val(a[0]), shape=list(a[1]), broadcast_dims=list(a[2]))
        elif pid is ops.PrimIDs.RESHAPE:
            out = fd.ops.reshape(val(a[0]), new_shape=list(a[1]))
        elif pid is ops.PrimIDs.SLICE:
            strides = list(a[3]) if len(a) > 3 and a[3] is not None else [1] * len(a[1])
            out = fd.ops.slice(val(a[0]), start_indices=list(a[1]), end_indices=list(a[2]), strides=strides)
        elif pid is ops.PrimIDs.SQUEEZE:
            out = fd.ops.squeeze(val(a[0]), dims=list(a[1]))
        elif pid is ops.PrimIDs.TRANSPOSE:
            out = fd.ops.permute(val(a[0]), dims=list(a[1]))
        elif pid is ops.PrimIDs.SHALLOW_COPY:
            out = fd.ops.set(val(a[0]))
        elif info.kind == "reduction":
            out = getattr(fd.ops, info.nv_name)(val(a[0]), dims=list(a[1]), keepdim=False)
        elif pid is ops.PrimIDs.PAD:  # (executor._plain_pad: no interior padding)
            widths = [w for lo, hi, _ in reversed(a[2]) for w in (lo, hi)]
            out = fd.ops.pad(val(a[0]), pad_widths=widths, value=val(a[1]))
        elif pid is ops.PrimIDs.FULL:
            out = fd.ops.full(
                shape=list(a[0]), fill_value=val(a[1]), dtype=datatype(DataType, b.kwargs["dtype"])
            )
        else:  # pragma: no cover - the op table and this switch are kept in step
            raise NotImplementedError(f"fusion_alias: no lowering for {b.sym.name}")
        env[b.output.name] = out

    shapes = {p.name: tuple(p.shape) for b in spec.bsyms for p in proxy_args(b) + proxy_outs(b) if isinstance(p, TensorProxy)}

    def shaped(src, dst_name: str):
        """The written value at the destination's shape (``copy_`` broadcasts its source)."""
        v = val(src)
        want = shapes.get(dst_name)
        have = tuple(src.shape) if isinstance(src, TensorProxy) else ()
        if want is None or have == want:
            return v
        offset = len(want) - len(have)
        return fd.ops.broadcast_in_dim(v, shape=list(want), broadcast_dims=list(range(offset, len(want))))

    # Note [one buffer per program tensor]: ``t0 = relu(a); t1 = tanh(t0); t0.copy_(t1)``
    # makes t1 (fresh) and t0 (final) the same fd value. Eager keeps them in two
    # buffers, and later writes into one must not show in the other, so a value
    # already added as an output or a write-back source is added again through
    # ``fd.ops.set`` (a copy): its own buffer.
    used: set[int] = set()  # ids of the fd values added so far (env holds each value once)

    def distinct(v):
        if id(v) in used:
            return fd.ops.set(v)
        used.add(id(v))
        return v

    for i in spec.writebacks:
        v = shaped(spec.bsyms[i].args[0], spec.writeback_dst[i])
        distinct(v)
        fd.add_output(v, alias_input=env[spec.writeback_dst[i]])
    for name in emitted_outputs(spec):
        if spec.output_kind[name] == "final":
            fd.add_output(distinct(shaped(spec.final_src[name], spec.final_dst[name])))
        else:
            fd.add_output(distinct(env[name]))
    return env


# ---------------------------------------------------------------------------
# A stand-in FusionDefinition that records calls and prints nvFuser syntax
# ---------------------------------------------------------------------------


class RecordedDataType:
    """Stand-in for ``nvfuser.DataType``: members print as ``DataType.Float`` etc."""

    class _Member(str):
        def __repr__(self):
            return f"DataType.{str(self)}"

    def __getattr__(self, name):
        return RecordedDataType._Member(name)


RecordedDataType = RecordedDataType()


@dataclass(frozen=True)
class RecordedValue:
    kind: str  # "T" tensor or "S" scalar
    index: int

    def __repr__(self):
        return f"{self.kind}{self.index}"


@dataclass
class RecordedCall:
    out: RecordedValue | None
    op: str  # "define_tensor", "define_scalar", "ops.<name>", "add_output"
    args: tuple
    kwargs: dict


class _OpsRecorder:
    def __init__(self, fd):
        self._fd = fd

    def __getattr__(self, name):
        def record(*args, **kwargs):
            return self._fd._record("ops." + name, args, kwargs, "T")

        return record


class RecordingFusionDefinition:
    """Records nvFuser API calls; ``str()`` prints them as nvFuser Python."""

    def __init__(self):
        self.calls: list[RecordedCall] = []
        self.ops = _OpsRecorder(self)
        self._counter = 0

    def _record(self, op, args, kwargs, kind):
        out = None
        if kind is not None:
            out = RecordedValue(kind, self._counter)
            self._counter += 1
        self.calls.append(RecordedCall(out, op, args, kwargs))
        return out

    def define_tensor(self, **kwargs):
        return self._record("define_tensor", (), kwargs, "T")

    def define_scalar(self, *args, **kwargs):
        return self._record("define_scalar", args, kwargs, "S")

    def add_output(self, value, alias_input=None):
        kwargs = {} if alias_input is None else {"alias_input": alias_input}
        self._record("add_output", (value,), kwargs, None)

    def to_source(self, name: str = "nvfuser_fusion") -> str:
        lines = [f"def {name}(fd : FusionDefinition) -> None :"]
        for c in self.calls:
            parts = [repr(a) for a in c.args] + [f"{k}={v!r}" for k, v in c.kwargs.items()]
            call = f"fd.{c.op}({', '.join(parts)})"
            lines.append(f"    {c.out!r} = {call}" if c.out is not None else f"    {call}")
        return "\n".join(lines)

    __str__ = to_source
