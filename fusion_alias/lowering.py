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
or a view of an input made after the fusion ran). ``region_plan.plan_region``
(or ``planned_later``, at first use) makes it (region_plan.py, Note [three kinds
of region outputs]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from thunder.core.proxies import NumberProxy, Proxy, TensorProxy
import thunder.core.dtypes as dtypes

from fusion_alias import ops
from fusion_alias.aliasing import proxy_args, proxy_outs
from fusion_alias.region_plan import RegionSpec


def emitted_outputs(spec: RegionSpec) -> list[str]:
    """Names whose values ``define_region`` adds as plain fusion outputs, in order."""
    names = []
    for o in list(spec.outputs) + list(spec.extra_outputs):
        # each "final" name is its own memory (a tensor the region made and wrote):
        # two of them written with one value are still two buffers
        if spec.output_kind.get(o.name) in ("fresh", "final") and o.name not in names:
            names.append(o.name)
    return names


def lone_internal_views(spec: RegionSpec) -> frozenset:
    """Note [a view of a tensor only the region sees]
    -------------------------------------------------
    An output that is a view of a tensor the region made but does not return (an extra output:
    ``reshape(clone(transpose(...)))``, which is what a non-contiguous ``x.t().flatten()``
    becomes) is replayed on that tensor after the fusion ran, so it came back with a ``_base``. In a call that computes gradients Thunder returns it from a
    custom autograd Function, and PyTorch refuses a later in-place op on a view a Function made
    ("Output 0 of ThunderOutputFunctionBackward is a view and is being modified inplace"), where
    eager's result is a copy, or a view of a temporary, and may be written (session 29 probe: plain
    ``thunder.jit`` writes ``a.exp().t().flatten()``, fusion_alias raised). Where no other output
    views that tensor, nothing else can see its memory: such an output is returned detached from it
    (``detach()``: the same storage, no view relation; the region runs without grad), a tensor of its
    own as far as autograd is concerned. Two outputs viewing one such tensor keep their relation:
    a write through one changes the other, and autograd must hear of it (it raises, loud). A view
    the trace makes outside regions of a region's output (``a.exp().t()``: views run outside
    regions) is Thunder's, and raises as in plain ``thunder.jit``.

    The names of those outputs (computed once per spec)."""
    lone = getattr(spec, "_lone_internal_views", None)
    if lone is None:
        seen_outside = {p.name for p in spec.inputs} | {o.name for o in spec.outputs}
        viewers: dict[str, list[str]] = {}  # a base only the region sees -> the outputs viewing it
        for o in spec.outputs:
            if spec.output_kind.get(o.name) == "view":
                base = spec.view_chain[o.name][0]
                if base not in seen_outside:
                    viewers.setdefault(base, []).append(o.name)
        lone = spec._lone_internal_views = frozenset(names[0] for names in viewers.values() if len(names) == 1)
    return lone


def assemble_outputs(spec: RegionSpec, inputs: dict, emitted: Sequence) -> tuple:
    """The region's results from its input tensors and its plain fusion outputs.

    ``emitted`` holds the values of ``emitted_outputs(spec)``, in order. Views
    (and copy_ results) are replayed with torch on the tensor whose memory they
    name, after the fusion ran: an input, or a tensor the region returns.
    """
    import torch

    from fusion_alias.views import replay_view

    # (a ZeroTensor has no storage to ask: Thunder's torch-autograd vjp fallback hands the backward one, ``sgn``'s
    # gradient of a real tensor; asking raised "invalid python storage" in every backward through ``x.sgn()``)
    input_storages = {t.untyped_storage().data_ptr() for t in inputs.values()
                      if isinstance(t, torch.Tensor) and not t._is_zerotensor()}
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
    lone = lone_internal_views(spec)
    for o in spec.outputs:
        if spec.output_kind[o.name] == "view":
            base, steps = spec.view_chain[o.name]
            v = replay_view(inputs[base] if base in inputs else values[base], steps)
            results.append(v.detach() if o.name in lone else v)  # Note [a view of a tensor only the region sees]
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
