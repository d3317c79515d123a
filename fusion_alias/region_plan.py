"""Region planning: which writes of a region land, and how each of its outputs is produced.

``plan_region`` turns a region's symbols, inputs, outputs and alias groups into a
:class:`RegionSpec`, which ``lowering.define_region`` and every backend read;
``planned_later`` makes one that plans itself at first use (Note [regions planned
at first use]).

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

from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias import ops
from fusion_alias.aliasing import proxy_outs


@dataclass
class RegionSpec:
    """Everything needed to define and run one region (read only: one made by ``planned_later``
    shares its sequences with the fusion bound symbol)."""

    name: str
    inputs: Sequence[Proxy]  # (a list, or the fusion bound symbol's arguments tuple)
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


# The same gradient converted to another dtype on its way (``a.double() * b.sum()``: the 0-d
# ``b.sum()`` is converted before the product) reaches the broadcast as the conversion's result,
# which the trace declares 0-d: there the conversion is inconsistent, its operand of ``a``'s shape
# and its result 0-d. Both are refused alike.
_BROADCAST_IN_DIM = ops.PrimIDs.BROADCAST_IN_DIM
_CONVERT_ELEMENT_TYPE = ops.PrimIDs.CONVERT_ELEMENT_TYPE

WRONG_0D_GRADIENT = (
    "Thunder 0.2.6 computed a wrong gradient for a 0-d intermediate used with a tensor (e.g. a * b.sum() "
    "with both requiring grad); plain thunder.jit returns that wrong gradient without an error. Workaround: "
    "keep the reduced dimension (b.sum(0, keepdim=True) or b.sum().reshape(1))")


def _check_trace_consistency(name: str, b: BoundSymbol) -> None:
    """Raise ``TraceShapeError`` where ``b``, a ``broadcast_in_dim`` of region ``name``, broadcasts
    a tensor with dimensions its shape does not have, or a ``convert_element_type`` changes a shape
    (Note [Thunder's wrong 0-d gradients])."""
    a = b.args[0]
    if not isinstance(a, TensorProxy):
        return
    if b.sym.id is _CONVERT_ELEMENT_TYPE:
        out = b.output
        if isinstance(out, TensorProxy) and tuple(out.shape) != tuple(a.shape):
            raise TraceShapeError(
                f"fusion_alias: Thunder's trace converts {a.name} of shape {tuple(a.shape)} to {out.name} of shape "
                f"{tuple(out.shape)} (region {name}): {WRONG_0D_GRADIENT}")
        return
    have, dims = tuple(a.shape), tuple(b.args[2])
    if len(have) != len(dims):
        raise TraceShapeError(
            f"fusion_alias: Thunder's trace broadcasts {a.name} of shape {have} with broadcast "
            f"dimensions {dims} (region {name}): {WRONG_0D_GRADIENT}")


def explain_inconsistent_trace(spec, error: Exception) -> None:
    """Raise ``TraceShapeError`` from ``error`` (what running region ``spec`` raised) where one of the
    region's elementwise ops has a tensor operand of another shape than its result, other than a 0-d one:
    the shapes Thunder's trace declares do not hold (Note [Thunder's wrong 0-d gradients]: in
    ``x - x.mean()``'s backward, ``div(neg(g), 12.0)`` of a 2-d ``g`` is declared 0-d, and the broadcast
    after it failed with torch's "shape '[1, 1]' is invalid for input of size 12"). Asked only after a
    region failed: the check walks the region's symbols."""
    for b in spec.bsyms:
        kind = ops.op_info(b)
        out = b.output
        if kind is None or kind.kind != "elementwise" or not isinstance(out, TensorProxy):
            continue
        for a in b.args:
            if isinstance(a, TensorProxy) and len(a.shape) and tuple(a.shape) != tuple(out.shape):
                raise TraceShapeError(
                    f"fusion_alias: Thunder's trace computes {out.name} of shape {tuple(out.shape)} from {a.name} of "
                    f"shape {tuple(a.shape)} elementwise (region {spec.name}): {WRONG_0D_GRADIENT}") from error


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
    copies = _copies_checked(name, bsyms)
    inputs, outputs, bsyms = list(inputs), list(outputs), list(bsyms)
    # (its fields in order: keyword arguments cost a dict per call, and there is a call per region)
    return RegionSpec(
        name,
        inputs,
        outputs,
        bsyms,
        [list(g) for g in alias_groups] if alias_groups else [],
        *_planned(copies, bsyms, inputs, outputs, view_key),
    )


# Note [regions planned at first use]
# -----------------------------------
# A region's plan (its write-backs, output kinds, view chains) is read when its
# callable is defined: the reference and nvFuser backends do that when the region
# is made, the compiled torch backend at the region's first call or ``repr``. The
# aliased 100k-bsym bench makes 40k regions in one pass, and planning them all
# there was half of making them (and Thunder's ``update_fusion_call_ctx`` makes
# every region again after the pass). So ``FusionAliasExecutor.fuse`` makes each
# region's spec with ``planned_later``: a ``RegionSpec`` that plans itself when one
# of the planned fields is first read. What the pass itself needs of the plan is
# decided when the region is made, as before:
#
# * the check of Note [Thunder's wrong 0-d gradients] runs there, so its error
#   reaches the user from the same call, with the same message;
# * whether the region writes back (a region that only writes is kept from DCE):
#   ``planned_later`` says. A region without ``copy_`` writes nothing back. The last
#   ``copy_`` of a region is never covered by a later write, so where its
#   destination is an input, it is written back: ``x.add_(1)`` on an input ``x``,
#   what large traces are made of, is decided without planning. Otherwise (a
#   last write into a tensor the region made) the spec is planned there.
#
# The lazy spec keeps the lists it is given (the fusion bound symbol's own
# arguments, outputs and subsymbols): no one changes them.


def planned_later(
    name: str,
    bsyms: Sequence[BoundSymbol],
    inputs: Sequence[Proxy],
    outputs: Sequence[Proxy],
    meta,
    sym_ids: Sequence | None = None,
) -> tuple[RegionSpec, bool]:
    """``plan_region(name, bsyms, inputs, outputs, meta.alias_groups, meta.view_key)``, planned
    when first read, and whether it writes back (``bool(spec.writebacks)``), decided without
    planning where one look decides it (Note [regions planned at first use]). Raises
    ``TraceShapeError`` now, as ``plan_region`` would. ``meta``: what the pass knows of the
    region (``regions._RegionMeta``), kept as ``spec.meta``; its alias groups are kept, not copied.
    ``sym_ids``: each of ``bsyms``' ``sym.id``, where the caller has them (the pass's graph does:
    a list of them is read without touching each symbol, a region of 50k symbols on the bench)."""
    copy_id = ops.COPY_ID
    last_copy = None
    # (_copies_checked, less the list: what this needs is the last copy_)
    for k, sym_id in enumerate(sym_ids if sym_ids is not None else [b.sym.id for b in bsyms]):
        if sym_id is copy_id:
            last_copy = bsyms[k]
        elif sym_id is _BROADCAST_IN_DIM or sym_id is _CONVERT_ELEMENT_TYPE:
            _check_trace_consistency(name, bsyms[k])
    spec = _PlannedLater.__new__(_PlannedLater)
    spec.name, spec.inputs, spec.outputs, spec.bsyms, spec.alias_groups, spec.meta = (
        name, inputs, outputs, bsyms, meta.alias_groups, meta
    )
    if last_copy is None:
        return spec, False  # (no copy_: nothing to write back)
    d = last_copy.args[1]._name  # the last copy_ is written back where it writes an input
    for p in inputs:
        if p._name == d:  # (aliasing.py, Note [proxy names read directly])
            return spec, True
    return spec, bool(spec.writebacks)


_PLANNED_FIELDS = frozenset(
    ("writebacks", "writeback_dst", "output_kind", "view_chain", "final_src", "extra_outputs", "final_dst")
)


class _PlannedLater(RegionSpec):
    """A ``RegionSpec`` whose planned fields are filled in when one of them is first read."""

    def __getattr__(self, attr):  # (only called for attributes not set: the planned fields until planned)
        if attr not in _PLANNED_FIELDS:
            raise AttributeError(attr)
        (self.writebacks, self.writeback_dst, self.output_kind, self.view_chain, self.final_src,
         self.extra_outputs, self.final_dst) = _planned(
            _copies_checked(self.name, self.bsyms), self.bsyms, self.inputs, self.outputs, self.meta.view_key
        )
        return getattr(self, attr)


def _copies_checked(name: str, bsyms: Sequence[BoundSymbol]) -> list[int]:
    """The positions of the ``copy_`` symbols of region ``name``; raises ``TraceShapeError`` at
    the first inconsistent broadcast or conversion (Note [Thunder's wrong 0-d gradients])."""
    copy_id = ops.COPY_ID
    copies: list[int] = []
    for i, b in enumerate(bsyms):  # (nothing planned after this raises: the check raises as one made first would)
        sym_id = b.sym.id
        if sym_id is copy_id:
            copies.append(i)
        elif sym_id is _BROADCAST_IN_DIM or sym_id is _CONVERT_ELEMENT_TYPE:
            _check_trace_consistency(name, b)
    return copies


def _planned(copies: list[int], bsyms, inputs, outputs, view_key) -> tuple:
    """A spec's planned fields, in order: writebacks, writeback_dst, output_kind, view_chain,
    final_src, extra_outputs, final_dst."""
    input_names = {p._name for p in inputs}  # (aliasing.py, Note [proxy names read directly])
    produced_by = None  # name -> the symbol of the region making it (``_producers``), made when first needed
    if copies:
        writebacks, writeback_dst, internal_final, produced_by = _plan_writes(
            bsyms, copies, view_key or _own_name, input_names
        )
    else:
        writebacks, writeback_dst, internal_final = [], {}, {}
    output_kind, view_chain, final_src, extra_outputs, final_dst = {}, {}, {}, [], {}
    if outputs:
        if produced_by is None:
            produced_by = _producers(bsyms)
        _plan_outputs(
            bsyms, outputs, input_names, produced_by, internal_final,
            output_kind, view_chain, final_src, extra_outputs, final_dst,
        )
    return writebacks, writeback_dst, output_kind, view_chain, final_src, extra_outputs, final_dst


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


def _plan_outputs(bsyms, outputs, input_names: set, produced_by: dict, internal_final: dict,
                  kinds: dict, chains: dict, final_src: dict, extra_outputs: list, final_dst: dict) -> None:
    """Fill in a spec's output kinds, view chains, "final" values (and the tensors they land
    in) and extra outputs."""
    output_names = {o.name for o in outputs}

    def materialize(name: str, proxy: Proxy | None) -> None:
        if name in internal_final:
            kinds[name], final_src[name] = "final", internal_final[name]
            final_dst[name] = name
        else:
            kinds[name] = "fresh"
        if name not in output_names and proxy is not None:
            extra_outputs.append(proxy)

    for o in outputs:
        if not isinstance(o, TensorProxy):
            kinds[o.name] = "fresh"
            continue
        base, steps = _memory_base(o.name, input_names, produced_by)
        if base == o.name and base not in input_names:
            materialize(base, None)
        else:
            kinds[o.name], chains[o.name] = "view", (base, steps)
            if base not in input_names and base not in kinds:
                materialize(base, _proxy_named(bsyms, base))


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
