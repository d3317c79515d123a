"""The compiled torch backend: each region as a straight-line torch function, generated once.

The reference backend interprets the recorded fusion definition on every call
(a snapshot of every input, the call list walked, ops dispatched by name).
That is what makes its adversarial schedules possible, and what makes it slow:
on a CPU, where ``backend="auto"`` used to mean the reference backend, a
cached call of a 64-tensor optimizer step spent two thirds of its time there.
This backend instead turns the same recorded definition into Python source
once per region, compiles it (as Thunder's torch executor does with its
traces), and calls that function: one line per op, the write-backs as
``copy_`` into the destination inputs, then the region's outputs assembled
as ``lowering.assemble_outputs`` would (the destination tensors for ``copy_``
results, views replayed on the inputs).

It implements the ``reads-first`` schedule, without snapshots.

Note [reads-first without snapshots]
------------------------------------
``reads-first`` snapshots every input so that every read sees memory as it
was at region entry, and lands all write-backs at exit. In the generated
function, every op of the body runs before the first write-back lands, and
no op of the body writes memory, so every read the body makes already sees
memory at region entry: no snapshot is needed for them. What can still see
later memory is a value that is only a *view* of an input (a slice, a reshape,
a cast to the same dtype, the input itself) and is used after the first
write-back lands: a write-back's source, or a plain output of the region.
Those, and only those, are cloned, right before the write-backs land:

* a plain output that is a view of an input is always cloned (the reference
  backend returns such values as fresh tensors too: ``assemble_outputs``
  clones what shares an input's storage);
* a write-back source that is a view of an input that is written, or that is
  in an alias group with a written input, is cloned; one that is a view of
  any other input is cloned when, at run time, it shares a storage with a
  written input (a storage lookup, and only for such sources: the alias
  groups are not trusted blindly).

Example: ``a.copy_(b.t()); b.copy_(a)`` with ``a`` and ``b`` in one alias
group. Both sources are views of inputs in the written group, so both are
cloned before ``a`` is written, and ``b`` receives ``a``'s entry value, as
under ``reads-first``. A region with no alias groups whose write-backs all
write computed values (``p.copy_(p - lr * g)``) clones nothing.

``writes-first`` stays with the reference backend: a schedule other than
``reads-first`` always runs there (``executor.make_callable``).
"""

from __future__ import annotations

import itertools

import torch

from fusion_alias import ops
from fusion_alias.backends.reference import _ELEMENTWISE, _REDUCTIONS, _TORCH_DTYPES, describe
from fusion_alias.lowering import (
    RecordedDataType,
    RecordedValue,
    RecordingFusionDefinition,
    define_region,
    emitted_outputs,
    lone_internal_views,
)

# fd.ops.<name> -> the torch function to call when at least one argument is a tensor
# (the op table's wrappers only add the case of Python numbers)
_DIRECT = {nv: fn for nv, fn in itertools.chain(ops._UNARY.values(), ops._BINARY.values())}

# ops whose result may be (a view of) their first argument's memory
_VIEWING = frozenset({"cast", "broadcast_in_dim", "reshape", "slice", "squeeze", "permute"})


# Note [Python numbers in binary ops]
# ------------------------------------
# On a CPU, ``torch.mul(t, 0.5)`` costs 2.5x ``torch.mul(t, u)`` (~21 vs ~8 µs on 16
# floats): the number becomes a float64 0-dim tensor and TensorIterator takes its
# mixed-dtype path. Two rewrites keep the results and drop that cost:
#
# * a number operand of a binary op on a float32/float64 tensor becomes a 0-dim tensor
#   of that dtype, made once: the number is converted to the tensor's dtype either way
#   (both are "CPU scalars" to the kernel, and float32's compute type is float32), so
#   the bits are the same. Not for pow (its scalar fast paths), not for half types
#   (their compute type is float32), not for integers beyond 2**24 (double rounding).
# * ``add(y, mul(x, k))`` with ``k`` a number, ``x`` and ``y`` of one float dtype and the
#   product used nowhere else is ``torch.add(y, x, alpha=k)``: how Thunder decomposes
#   ``y.add_(x, alpha=k)``, put back together as eager runs it (one kernel; eager's
#   rounding, where the split form rounds the product first). The same for ``sub``.
_SAME_BITS = frozenset({torch.float32, torch.float64})


def _plain_number(v) -> bool:
    return type(v) in (float, int) and (type(v) is float or abs(v) < 2**24)


def _number_as_tensor(x, args, dtype_of, numbers, src) -> str | None:
    """A 0-dim tensor standing for the number ``x`` among ``args``, or None to keep ``x``."""
    if len(args) != 2:
        return None
    value = numbers.get(x.index) if isinstance(x, RecordedValue) else x
    if isinstance(x, RecordedValue) and x.index not in numbers:
        return None
    if not _plain_number(value):
        return None
    other = args[1] if args[0] is x else args[0]
    dtype = dtype_of.get(other.index) if isinstance(other, RecordedValue) else None
    if dtype not in _SAME_BITS:
        return None
    return src.const(torch.tensor(value, dtype=dtype), "num")


def _alpha_folds(calls, dtype_of, numbers) -> dict:
    """mul values folded into an add/sub's alpha: mul index -> (tensor operand, number)."""
    uses: dict[int, int] = {}
    for c in calls:
        for x in list(c.args) + list(c.kwargs.values()):
            if isinstance(x, RecordedValue):
                uses[x.index] = uses.get(x.index, 0) + 1
    muls = {}
    for c in calls:
        if c.op != "ops.mul" or len(c.args) != 2 or uses.get(c.out.index) != 1:
            continue
        a, b = c.args
        x, k = (a, b) if isinstance(b, RecordedValue) and b.index in numbers or not isinstance(b, RecordedValue) else (b, a)
        k = numbers.get(k.index) if isinstance(k, RecordedValue) else k
        if not isinstance(x, RecordedValue) or x.index in numbers or not _plain_number(k):
            continue
        dtype = dtype_of.get(x.index)
        if dtype in _SAME_BITS and dtype_of.get(c.out.index) == dtype:
            muls[c.out.index] = (x, k)
    folds = {}
    for c in calls:
        if c.op not in ("ops.add", "ops.sub") or len(c.args) != 2:
            continue
        a, b = c.args
        if isinstance(b, RecordedValue) and b.index in muls:
            y, m = a, b
        elif c.op == "ops.add" and isinstance(a, RecordedValue) and a.index in muls:
            y, m = b, a
        else:
            continue
        if isinstance(y, RecordedValue) and dtype_of.get(y.index) == dtype_of[m.index] and dtype_of.get(c.out.index) == dtype_of[m.index]:
            folds[m.index] = muls.pop(m.index)
    return folds


def _cast_number(x, dtype):
    return torch.tensor(x).to(dtype)


def _snapshot_if_shared(value, sources, written):
    """``value`` cloned when one of ``sources`` shares a storage with one of ``written``."""
    ptrs = {w.untyped_storage().data_ptr() for w in written}
    for s in sources:
        if s.untyped_storage().data_ptr() in ptrs:
            return value.clone()
    return value


def _fresh(v):
    """A plain output that may have internal overlap (an expanded view of a computed value)."""
    if torch._debug_has_internal_overlap(v) == 1:
        return v.clone(memory_format=torch.contiguous_format)
    return v


class _Source:
    """Builds the generated function's text and the globals it refers to."""

    def __init__(self):
        self.lines: list[str] = []
        self.globals: dict[str, object] = {"torch": torch}
        self._const_ids: dict[int, str] = {}
        self._n = 0

    def const(self, value, hint: str = "k") -> str:
        """A global name holding ``value``."""
        key = id(value)
        if key in self._const_ids and self.globals[self._const_ids[key]] is value:
            return self._const_ids[key]
        name = f"_{hint}{self._n}"
        self._n += 1
        self.globals[name] = value
        self._const_ids[key] = name
        return name

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)


def generate(spec, fd: RecordingFusionDefinition, dtype_of: dict | None = None) -> tuple[str, dict]:
    """Python source of ``spec``'s region function (named ``spec.name``) and its globals.

    ``dtype_of`` (recorded value index -> torch dtype, where the trace says) enables
    Note [Python numbers in binary ops].
    """
    from thunder.core.proxies import NumberProxy, TensorProxy

    src = _Source()
    calls = fd.calls
    dtype_of = dtype_of or {}
    numbers = {c.out.index: c.args[0] for c in calls if c.op == "define_scalar" and c.args}
    folded = _alpha_folds(calls, dtype_of, numbers)
    defs = [c for c in calls if c.op == "define_tensor" or (c.op == "define_scalar" and not c.args)]
    defined = [p for p in spec.inputs if isinstance(p, (TensorProxy, NumberProxy))]
    if len(defined) != len(spec.inputs) or len(defs) != len(defined):
        raise NotImplementedError(f"compiled backend: region {spec.name} has inputs the definition does not define")

    expr: dict[int, str] = {}  # recorded value index -> Python expression
    is_tensor: dict[int, bool] = {}
    taint: dict[int, frozenset] = {}  # recorded value index -> input positions whose memory it may view
    params = []
    for pos, (c, p) in enumerate(zip(defs, spec.inputs)):
        name = f"a{pos}"
        params.append(name)
        expr[c.out.index] = name
        is_tensor[c.out.index] = c.op == "define_tensor"
        taint[c.out.index] = frozenset({pos}) if c.op == "define_tensor" else frozenset()
    input_pos = {c.out.index: pos for pos, c in enumerate(defs)}
    viewing: set[int] = set()  # values made by a view op

    def arg(x) -> str:
        if isinstance(x, RecordedValue):
            return expr[x.index]
        if isinstance(x, (bool, int)) or x is None:
            return repr(x)
        return src.const(x)

    def tensor_arg(x) -> bool:
        return isinstance(x, RecordedValue) and is_tensor.get(x.index, False)

    for c in calls:
        if c.op == "define_scalar" and c.args:
            expr[c.out.index] = src.const(c.args[0])
            is_tensor[c.out.index] = False
            taint[c.out.index] = frozenset()
            continue
        if not c.op.startswith("ops."):
            continue
        name, a, kw = c.op[4:], c.args, c.kwargs
        out = f"v{c.out.index}"
        if c.out.index in folded:  # Note [Python numbers in binary ops]: becomes add's alpha
            x, k = folded[c.out.index]
            expr[c.out.index], is_tensor[c.out.index], taint[c.out.index] = None, True, frozenset()
            continue
        if name in ("add", "sub") and any(isinstance(x, RecordedValue) and x.index in folded for x in a):
            y, m = (a[0], a[1]) if isinstance(a[1], RecordedValue) and a[1].index in folded else (a[1], a[0])
            x, k = folded[m.index]
            rhs = f"{src.const(_DIRECT[name], name)}({arg(y)}, {arg(x)}, alpha={src.const(k)})"
        elif name == "set":  # nvFuser's set is a copy into a new tensor (as in the reference backend)
            rhs = f"{arg(a[0])}.clone(memory_format=torch.contiguous_format)"
        elif name in _ELEMENTWISE:
            if any(tensor_arg(x) for x in a) and name in _DIRECT:
                rhs = f"{src.const(_DIRECT[name], name)}({', '.join(_number_as_tensor(x, a, dtype_of, numbers, src) or arg(x) for x in a)})"
            else:  # numbers only: the reference's wrapper makes tensors of them
                rhs = f"{src.const(_ELEMENTWISE[name], name)}({', '.join(arg(x) for x in a)})"
        elif name == "where":
            rhs = f"{src.const(ops.torch_where, 'where')}({', '.join(arg(x) for x in a)})"
        elif name == "cast":
            dtype = src.const(_TORCH_DTYPES[str(kw['dtype'])], "dt")
            rhs = f"{arg(a[0])}.to({dtype})" if tensor_arg(a[0]) else f"{src.const(_cast_number, 'castn')}({arg(a[0])}, {dtype})"
        elif name == "broadcast_in_dim":
            fn = src.const(ops.torch_broadcast_in_dim, "bid")
            rhs = f"{fn}({arg(a[0])}, {src.const(tuple(kw['shape']))}, {src.const(tuple(kw['broadcast_dims']))})"
        elif name == "reshape":
            rhs = f"{arg(a[0])}.reshape({src.const(tuple(kw['new_shape']))})"
        elif name == "slice":
            s = tuple(slice(b, e, st) for b, e, st in zip(kw["start_indices"], kw["end_indices"], kw["strides"]))
            rhs = f"{arg(a[0])}[{src.const(s, 'sl')}]"
        elif name == "squeeze":
            dims = tuple(kw["dims"])
            rhs = f"{arg(a[0])}.squeeze({src.const(dims)})" if dims else f"{arg(a[0])}.view_as({arg(a[0])})"
        elif name == "permute":
            rhs = f"{arg(a[0])}.permute({src.const(tuple(kw['dims']))})"
        elif name in _REDUCTIONS:
            if kw.get("keepdim", False):
                raise NotImplementedError(f"compiled backend: fd.ops.{name} with keepdim=True")
            rhs = f"{src.const(_REDUCTIONS[name], name)}({arg(a[0])}, {src.const(kw['dims'])})"
        elif name == "pad":
            rhs = f"{src.const(ops.torch_pad_widths, 'pad')}({arg(a[0])}, {src.const(list(kw['pad_widths']))}, {arg(kw['value'])})"
        elif name == "full":
            dtype = src.const(_TORCH_DTYPES[str(kw['dtype'])], "dt")
            device = src.const(_device(spec), "dev")
            rhs = f"torch.full({src.const(tuple(kw['shape']))}, {arg(kw['fill_value'])}, dtype={dtype}, device={device})"
        else:
            raise NotImplementedError(f"compiled backend: no torch implementation of fd.ops.{name}")
        src.emit(f"{out} = {rhs}")
        expr[c.out.index] = out
        is_tensor[c.out.index] = True
        first = a[0] if a else None
        taint[c.out.index] = (
            taint.get(first.index, frozenset()) if name in _VIEWING and isinstance(first, RecordedValue) else frozenset()
        )
        if name in _VIEWING:
            viewing.add(c.out.index)  # may overlap itself (an expanded value): see _fresh

    writes = [c for c in calls if c.op == "add_output" and "alias_input" in c.kwargs]
    plain = [c for c in calls if c.op == "add_output" and "alias_input" not in c.kwargs]

    # Note [reads-first without snapshots]: clone what views an input and outlives the first write.
    written_pos = {input_pos[w.kwargs["alias_input"].index] for w in writes}
    name_pos = {p.name: pos for pos, p in enumerate(spec.inputs)}
    grouped = set(written_pos)
    for g in spec.alias_groups:
        members = {name_pos[n] for n in g if n in name_pos}
        if members & written_pos:
            grouped |= members
    emitted_expr = []
    for k, c in enumerate(plain):
        v = c.args[0]
        if not isinstance(v, RecordedValue):
            emitted_expr.append(arg(v))
            continue
        e = expr[v.index]
        if not is_tensor.get(v.index, False):
            emitted_expr.append(e)
        elif taint[v.index]:
            src.emit(f"o{k} = {e}.clone(memory_format=torch.contiguous_format)")
            emitted_expr.append(f"o{k}")
        elif v.index in viewing:
            emitted_expr.append(f"{src.const(_fresh, 'fresh')}({e})")
        else:
            emitted_expr.append(e)
    sources = []
    for k, w in enumerate(writes):
        v = w.args[0]
        e = arg(v)
        t = taint.get(v.index, frozenset()) if isinstance(v, RecordedValue) else frozenset()
        if t & grouped:
            src.emit(f"w{k} = {e}.clone()")
            e = f"w{k}"
        elif t and written_pos:
            viewed = ", ".join(f"a{i}" for i in sorted(t))
            dsts = ", ".join(f"a{i}" for i in sorted(written_pos))
            src.emit(f"w{k} = {src.const(_snapshot_if_shared, 'snap')}({e}, ({viewed},), ({dsts},))")
            e = f"w{k}"
        sources.append(e)
    for w, e in zip(writes, sources):
        src.emit(f"{expr[w.kwargs['alias_input'].index]}.copy_({e})")

    # the region's results, as lowering.assemble_outputs builds them
    names = emitted_outputs(spec)
    if len(names) != len(emitted_expr):
        raise NotImplementedError(f"compiled backend: region {spec.name}: outputs and definition disagree")
    values = dict(zip(names, emitted_expr))
    by_src = {spec.final_src[n].name: values[n] for n in names if spec.output_kind[n] == "final"}
    for o in list(spec.outputs) + list(spec.extra_outputs):
        if spec.output_kind[o.name] == "final" and o.name not in values:
            values[o.name] = by_src[spec.final_src[o.name].name]
    results = []
    lone = lone_internal_views(spec)
    for k, o in enumerate(spec.outputs):
        if spec.output_kind[o.name] == "view":
            base, steps = spec.view_chain[o.name]
            t = f"a{name_pos[base]}" if base in name_pos else values[base]
            for b in steps:
                fn = src.const(ops.op_info(b).torch_fn, "view")
                rest = ", ".join([arg(x) for x in b.args[1:]] + [f"{key}={arg(x)}" for key, x in b.kwargs.items()])
                t = f"{fn}({t}{', ' + rest if rest else ''})"
            results.append(f"{t}.detach()" if o.name in lone else t)  # (lowering.py, Note [a view of a tensor only the region sees])
        else:
            results.append(values[o.name])
    src.emit(f"return ({''.join(r + ', ' for r in results)})")
    header = f"def {spec.name}({', '.join(params)}):"
    return "\n".join([header] + (src.lines or ["    pass"])) + "\n", src.globals


def _dtypes(spec, env: dict) -> dict:
    """Recorded value index -> torch dtype, for the values that stand for a trace's tensor."""
    from thunder.core.dtypes import to_torch_dtype
    from thunder.core.proxies import TensorProxy

    from fusion_alias.aliasing import proxy_outs

    proxies = {p.name: p for p in spec.inputs if isinstance(p, TensorProxy)}
    for b in spec.bsyms:
        if not ops.is_copy(b):  # a copy_ result stands for the value written
            proxies.update((o.name, o) for o in proxy_outs(b) if isinstance(o, TensorProxy))
    out = {}
    for name, v in env.items():
        p = proxies.get(name)
        if p is not None and isinstance(v, RecordedValue):
            try:
                out[v.index] = to_torch_dtype(p.dtype)
            except Exception:
                pass
    return out


def _device(spec):
    from thunder.core.proxies import TensorProxy

    for p in spec.inputs:
        if isinstance(p, TensorProxy):
            return torch.device(p.device.type, p.device.index)
    for b in spec.bsyms:
        if b.sym.id is ops.PrimIDs.FULL and "device" in b.kwargs:
            dev = b.kwargs["device"]
            return torch.device(dev.type, dev.index)
    return torch.device("cpu")


class CompiledFusion:
    """A callable region: the recorded definition as one generated torch function.

    The definition is recorded and the function generated at the first call (or
    ``repr``), not when the region is made: a 100k-bsym trace makes tens of
    thousands of regions in one fusion pass, and a region Thunder rebuilds
    (``update_fusion_call_ctx``) may never run. The region's spec is planned
    then too (region_plan.py, Note [regions planned at first use]).
    """

    # (until built: class attributes, not three stores per region)
    _fd = None
    _source = None
    _fn = None  # the generated function, once built

    def __init__(self, spec):
        # (no bound method of self kept on self: that cycle left every region to the cyclic collector)
        self.spec = spec

    def _build(self) -> None:
        if self._source is None:
            fd = RecordingFusionDefinition()
            env = define_region(fd, self.spec, RecordedDataType)
            source, namespace = generate(self.spec, fd, _dtypes(self.spec, env))
            exec(compile(source, f"<fusion_alias compiled {self.spec.name}>", "exec"), namespace)
            self._fd, self._source, self._fn = fd, source, namespace[self.spec.name]

    @property
    def fd(self) -> RecordingFusionDefinition:
        self._build()
        return self._fd

    @property
    def source(self) -> str:
        """The generated Python source."""
        self._build()
        return self._source

    def __call__(self, *args):
        fn = self._fn
        if fn is None:
            self._build()
            fn = self._fn
        try:
            return fn(*args)
        except RuntimeError as e:
            from fusion_alias.region_plan import explain_inconsistent_trace

            explain_inconsistent_trace(self.spec, e)
            raise

    def __repr__(self):
        return describe(self.spec, self.fd.to_source(self.spec.name) + "\n# torch (compiled backend):\n" + _commented(self.source))


def _commented(text: str) -> str:
    return "\n".join("# " + line for line in text.rstrip().splitlines())
