"""The reference backend: run a recorded fusion definition with torch, the nvFuser way.

Inside a fusion every tensor is an SSA value and write-backs
(``add_output(v, alias_input=d)``) are separate stores whose order against the
region's other reads nvFuser does not promise. The reference backend makes
that freedom observable on a CPU with three adversarial schedules:

* ``reads-first``: every input read sees memory as it was at region entry
  (inputs are snapshotted), and all write-backs land at region exit, in
  definition order. A region that reads a tensor after writing an alias of it
  gets the stale value.
* ``writes-first``: each write-back lands as soon as the values it stores are
  computed, and every read sees memory when its op runs (inputs are the live
  buffers, views stay views). A region that reads a tensor *before* writing an
  alias of it, without a data edge to the write, sees the new value.
* ``reverse-writes``: as ``reads-first``, but the write-backs land in the
  reverse of definition order. nvFuser does not order two write-backs of one
  region against each other, so a region with two write-backs into
  overlapping memory (``a[0].zero_(); a.copy_(b)`` left as two
  ``add_output(..., alias_input=...)``) gives a wrong number here.

A partition that is legal under DESIGN.md §4 gives eager PyTorch's results
under all three; one that is not gives a wrong number under at least one of them
for the seed programs (see tests/test_oracle.py).
"""

from __future__ import annotations

import torch

from fusion_alias import ops
from fusion_alias.lowering import RecordedCall, RecordedValue, RecordingFusionDefinition
from fusion_alias.views import replay_view  # noqa: F401  (moved to fusion_alias.views; kept importable here)

SCHEDULES = ("reads-first", "writes-first", "reverse-writes")

_TORCH_DTYPES = {
    "Float": torch.float32,
    "Double": torch.float64,
    "Half": torch.float16,
    "BFloat16": torch.bfloat16,
    "Int32": torch.int32,
    "Int": torch.int64,
    "Bool": torch.bool,
    "ComplexFloat": torch.complex64,
    "ComplexDouble": torch.complex128,
}


# fd.ops.<name> -> torch, for the elementwise ops: the op table already holds both spellings
_ELEMENTWISE = {
    info.nv_name: info.torch_fn
    for info in ops.OP_TABLE.values()
    if info.kind == "elementwise" and info.nv_name not in ("cast", "where")
}
# ... and for the reductions (the lowering always asks for keepdim=False)
_REDUCTIONS = {info.nv_name: info.torch_fn for info in ops.OP_TABLE.values() if info.kind == "reduction"}


def _run_op(name: str, args: tuple, kwargs: dict):
    if name in _ELEMENTWISE:
        return _ELEMENTWISE[name](*args)
    if name == "where":
        return ops.torch_where(*args)
    if name == "cast":
        x = args[0] if isinstance(args[0], torch.Tensor) else torch.tensor(args[0])
        return x.to(_TORCH_DTYPES[str(kwargs["dtype"])])
    if name == "broadcast_in_dim":
        return ops.torch_broadcast_in_dim(args[0], kwargs["shape"], kwargs["broadcast_dims"])
    if name == "reshape":
        return args[0].reshape(tuple(kwargs["new_shape"]))
    if name == "slice":
        s = tuple(
            slice(b, e, st) for b, e, st in zip(kwargs["start_indices"], kwargs["end_indices"], kwargs["strides"])
        )
        return args[0][s]
    if name == "squeeze":
        dims = tuple(kwargs["dims"])
        return args[0].squeeze(dims) if dims else args[0].view_as(args[0])
    if name == "permute":
        return args[0].permute(tuple(kwargs["dims"]))
    if name == "set":  # nvFuser's set is a copy into a new tensor
        return args[0].clone()
    if name in _REDUCTIONS:
        if kwargs.get("keepdim", False):
            raise NotImplementedError(f"reference backend: fd.ops.{name} with keepdim=True")
        return _REDUCTIONS[name](args[0], kwargs["dims"])
    if name == "pad":
        return ops.torch_pad_widths(args[0], list(kwargs["pad_widths"]), kwargs["value"])
    if name == "full":
        return torch.full(tuple(kwargs["shape"]), kwargs["fill_value"], dtype=_TORCH_DTYPES[str(kwargs["dtype"])])
    raise NotImplementedError(f"reference backend: no torch implementation of fd.ops.{name}")


def run_recorded(fd: RecordingFusionDefinition, inputs: list, schedule: str) -> dict[int, object]:
    """Execute ``fd`` on ``inputs`` (tensors and numbers, in definition order).

    Returns recorded value index → torch value, after all write-backs landed.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    env: dict[int, object] = {}
    defs = [c for c in fd.calls if c.op in ("define_tensor",) or (c.op == "define_scalar" and not c.args)]
    if len(defs) != len(inputs):
        raise RuntimeError(f"fusion expects {len(defs)} inputs, got {len(inputs)}")
    for c, x in zip(defs, inputs):
        if schedule != "writes-first" and isinstance(x, torch.Tensor):
            x = x.clone()  # snapshot: reads see memory at region entry
        env[c.out.index] = x

    body = [c for c in fd.calls if c.op.startswith("ops.") or (c.op == "define_scalar" and c.args)]
    writes = [c for c in fd.calls if c.op == "add_output" and "alias_input" in c.kwargs]
    producer = {c.out.index: c for c in body}

    def value(x):
        return env[x.index] if isinstance(x, RecordedValue) else x

    def run(c: RecordedCall) -> None:
        if c.out.index in env:
            return
        if c.op == "define_scalar":
            env[c.out.index] = c.args[0]
            return
        env[c.out.index] = _run_op(c.op[4:], tuple(value(a) for a in c.args), {k: value(v) for k, v in c.kwargs.items()})

    def run_with_deps(x) -> None:
        stack = [x]
        order = []
        seen = set()
        while stack:  # iterative post-order over the producers of x
            v = stack.pop()
            if not isinstance(v, RecordedValue) or v.index in env or v.index in seen:
                continue
            c = producer[v.index]
            pending = [a for a in list(c.args) + list(c.kwargs.values()) if isinstance(a, RecordedValue) and a.index not in env and a.index not in seen]
            if pending:
                stack.append(v)
                stack.extend(pending)
                continue
            seen.add(v.index)
            order.append(c)
        for c in order:
            run(c)

    def land(w: RecordedCall, live_inputs: dict[int, torch.Tensor]) -> None:
        dst = live_inputs[w.kwargs["alias_input"].index]
        dst.copy_(value(w.args[0]))

    live = {c.out.index: x for c, x in zip(defs, inputs)}
    if schedule == "writes-first":
        for w in writes:
            run_with_deps(w.args[0])
            land(w, live)
        for c in body:
            run(c)
    else:
        for c in body:
            run(c)
        for w in reversed(writes) if schedule == "reverse-writes" else writes:
            land(w, live)
    return env


class ReferenceFusion:
    """A callable region: torch execution of the recorded definition under a schedule."""

    def __init__(self, spec, schedule: str):
        from fusion_alias.lowering import RecordedDataType, define_region

        self.spec = spec
        self.schedule = schedule
        self.fd = RecordingFusionDefinition()
        self.env_map = define_region(self.fd, spec, RecordedDataType)

    def __call__(self, *args):
        from fusion_alias.lowering import assemble_outputs

        spec = self.spec
        check_input_shapes(spec, args)
        try:
            env = run_recorded(self.fd, list(args), self.schedule)
        except RuntimeError as e:
            from fusion_alias.region_plan import explain_inconsistent_trace

            explain_inconsistent_trace(spec, e)
            raise
        inputs = {p.name: a for p, a in zip(spec.inputs, args)}
        # plain fusion outputs, in the order define_region added them (emitted_outputs)
        emitted = [
            _value(env, c.args[0]) for c in self.fd.calls if c.op == "add_output" and "alias_input" not in c.kwargs
        ]
        return assemble_outputs(spec, inputs, emitted)

    def __repr__(self):
        return describe(self.spec, self.fd.to_source(self.spec.name))


def check_input_shapes(spec, args) -> None:
    """Raise ``TraceShapeError`` when a tensor input's shape differs from its proxy's
    (Thunder handed the region a value its trace does not describe; lowering.py,
    Note [Thunder's wrong 0-d gradients])."""
    from fusion_alias.region_plan import TraceShapeError

    for p, x in zip(spec.inputs, args):
        shape = getattr(p, "shape", None)
        if shape is None or not isinstance(x, torch.Tensor) or tuple(x.shape) == tuple(shape):
            continue
        raise TraceShapeError(
            f"fusion_alias: region {spec.name} got {p.name} of shape {tuple(x.shape)} where Thunder's trace "
            f"declares {tuple(shape)}: Thunder handed the region a value its own trace does not describe"
        )


def _value(env, x):
    return env[x.index] if isinstance(x, RecordedValue) else x


def describe(spec, source: str) -> str:
    """A region's definition text annotated with its alias groups and write-backs.

    Inputs are named as the definition names them (``T0``, ``T1``, ... in
    definition order) next to the trace's proxy names.
    """
    tensor_index = {}
    for p in spec.inputs:
        if hasattr(p, "shape"):
            tensor_index[p.name] = len(tensor_index)
    label = {n: f"T{tensor_index[n]} ({n})" if n in tensor_index else n for n in tensor_index}
    lines = [source]
    for g in spec.alias_groups:
        lines.append("# alias group: {" + ", ".join(label.get(n, n) for n in g) + "} may share memory")
    if not spec.alias_groups:
        lines.append("# alias groups: none (no two inputs share memory)")
    for i in spec.writebacks:
        b = spec.bsyms[i]
        src = getattr(b.args[0], "name", b.args[0])
        dst = spec.writeback_dst.get(i, b.args[1].name)
        lines.append(f"# write-back: {src} -> {label.get(dst, dst)}")
    return "\n".join(lines)
