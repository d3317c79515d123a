"""One base per memory: writes through different views of one memory become updates of its base.

Note [one base per memory]
--------------------------
Read substitution (``functionalize.py``) knows a memory's contents after a
write only at the view written. When a program writes one memory through two
different views, a later read of the other view, or of the whole, must read
the buffer, and the partitioner cuts between the write and the read. Seed
``h`` (``b = a[0, 0]; return a.exp_() * b.tanh_()``) took 3 regions that way.

This pass rewrites each write into such a memory as a write of its *base* (the
memory's root: an input, or a tensor the program made): the written view's
value is placed into the base's current value at the view's positions, and
the base is written whole::

    t2 = exp(a); t3 = copy_(t2, a)                 # a.exp_()
    t4 = tanh(squeeze(slice(a)))                   # b.tanh_(), b = a[0, 0] ...
    t5 = copy_(t4, b)                              # ... written through b
    mul(t3, t4)

becomes (``substitute_reads`` then makes every read after a write read the
value written)::

    t2 = exp(a); t3 = copy_(t2, a)
    t4 = tanh(squeeze(slice(t2)))
    m = pad(full((1, 1), True), False, ((0, 4, 0), (0, 4, 0)))   # where b sits in a
    v = pad(broadcast_in_dim(t4, (1, 1), ()), 0.0, ((0, 4, 0), (0, 4, 0)))
    n = where(m, v, t2); t6 = copy_(n, a)          # both writes now write a: one write-back
    t5 = squeeze(slice(t6))                        # the old result's name, a view of a again
    mul(n, t4)

Every write of ``a`` is now a write of the same view, so the writes coalesce
into one write-back of the final value, and no read of ``a`` is left after it:
2 regions where there were 3, the kernel model's count (one reads ``a[0, 0]``
before the write; the other writes ``a``). The price is that a write of a few
elements writes the whole base: so a memory written through one view only (a
KV cache's new rows) is left as it is.

Rewritten only when it is exact: every tensor the program touches in the memory
group has the one root (no other input, no opaque op's result that may alias
it), every write into the group is a fusible ``copy_``, and every written view
is the root through slices of step 1, squeezes, permutes, reshapes and
unsqueezes, whose inverses (``pad``, ``broadcast_in_dim``, ``transpose``,
``reshape``) put each element back at its place.

Note [inputs that are views of another input]
---------------------------------------------
Seed ``f`` passes ``x`` and ``x[0, 0]`` as two arguments: two roots of one
memory group, which the rule above leaves alone. When the call's tensors show
that one input is exactly a view of another (same storage and dtype; its
offset, sizes and strides those of a slice of step 1, a select, a permute or
an unsqueeze of the other), every use of it but the ``return`` is renamed to
that view, made from the other input at the top of the program, and the
program is then the same as seed ``h``. The guard keys programs by the exact
relation (``guard.py``: offsets inside a component, strides of non-contiguous
tensors), so a call in which the inputs relate otherwise compiles anew.
``x[:, ::2]`` and ``x[:, 1::2]`` are not views of each other: their
hazard cuts stay.
"""

from __future__ import annotations

import math

import thunder.core.dtypes as dtypes
import thunder.core.prims as prims
from thunder.core.proxies import TensorProxy, variableify
from thunder.core.trace import tracectx

from fusion_alias import ops
from fusion_alias.aliasing import flattened, may_write
from fusion_alias.proxies_by_name import tensor_proxies_by_name
from fusion_alias.view_relations import boxes_disjoint, invertible, relate, view_box

_PrimIDs = prims.PrimIDs
# symbols that name tensors without reading or writing them in a region
_NOT_ACCESSES = (_PrimIDs.RETURN, _PrimIDs.UNPACK_TRIVIAL, _PrimIDs.GET_GRAD, _PrimIDs.PUT_GRAD, _PrimIDs.DEL)


def rewrite(trace, flat: list, info, tensor_inputs, input_groups, actual: dict, is_fusible, reanalyze):
    """``(flat, info, written_views)`` with writes into memories written through two or more views
    rewritten as base updates (module Notes); the very same ``flat`` and ``info`` when nothing applies.

    ``written_views`` maps the result of each new write of a base to ``(the view written, its value)``:
    read substitution then knows that view's contents as well as the base's.
    ``reanalyze(flat)`` runs ``aliasing.analyze`` again on a rewritten list."""
    candidates = _candidate_groups(flat, info, is_fusible)
    if not candidates:
        return flat, info, {}
    roots = _accessed_roots(flat, info, candidates, set(actual))
    new_flat = _inputs_as_views(trace, flat, info, candidates, roots, actual)
    new_info = info
    if new_flat is not flat:
        new_info = reanalyze(new_flat)
        candidates = _candidate_groups(new_flat, new_info, is_fusible)
        roots = _accessed_roots(new_flat, new_info, candidates, set())
    written_views: dict = {}
    rewritten = _writes_as_base_updates(trace, new_flat, new_info, is_fusible, written_views, candidates, roots)
    if rewritten is None:
        return flat, info, {}  # (renamed inputs alone buy nothing: leave the program as it was)
    return rewritten, reanalyze(rewritten), written_views


def _copies(flat):
    copy_id = ops.COPY_ID
    return [b for b in flat if b.sym.id is copy_id and isinstance(b.args[1], TensorProxy)]


def _candidate_groups(flat, info, is_fusible) -> set:
    """Memory groups written through two or more views, or written through one view and then read
    by a fusible op through another (``cache[:, 5] = k; (cache * q).sum(-1)``: the read then reads
    the cache's new value, before the write lands, instead of waiting for it in a later region)."""
    keys: dict[str, set] = {}
    read_elsewhere: set = set()
    whole: set = set()  # groups written through a view of all of the root's elements (``a.t()``)
    watched: set = set()  # groups written only through partial views so far: their reads are checked
    copy_id, root, view_key, group = ops.COPY_ID, info.root, info.view_key, info.group
    for b in flat:
        sym_id = b.sym.id
        if sym_id is copy_id and isinstance(b.args[1], TensorProxy):
            dst = b.args[1]
            g = group(dst.name)
            keys.setdefault(g, set()).add(view_key[dst.name])
            chain = info.chain[dst.name]
            if not chain or math.prod(dst.shape) == math.prod(chain[0].args[0].shape):
                whole.add(g)
                watched.discard(g)
            elif g not in whole:
                watched.add(g)
            continue
        if not watched or ops.is_view(b) or sym_id in _NOT_ACCESSES or not is_fusible(b):
            continue
        for p in flattened(b)[3]:
            name = p.name
            if name in root:
                g = group(name)
                if g in watched and view_key[name] not in keys[g]:
                    read_elsewhere.add(g)
    # (written whole through one view, the write itself is the whole base: a later read waits for it)
    return {g for g, k in keys.items() if len(k) > 1} | (read_elsewhere - whole)


def _accessed_roots(flat, info, groups: set, inputs: set) -> dict[str, set]:
    """Memory group (of ``groups``) -> the roots of the tensors the program reads, writes or makes
    in it. A group with two roots of which one is not among ``inputs`` is neither one base nor
    inputs related as views: it is dropped, and the walk ends when no group is left."""
    roots: dict[str, set] = {}
    live = set(groups)
    root, group = info.root, info.group
    for b in flat:
        if b.sym.id in _NOT_ACCESSES:
            continue
        _, args, outs, _, _ = flattened(b)
        for p in (*args, *outs):
            r = root.get(p.name)
            if r is None:
                continue
            g = group(p.name)
            if g not in live:
                continue
            seen = roots.setdefault(g, set())
            if r not in seen:
                seen.add(r)
                if len(seen) > 1 and not seen <= inputs:
                    live.discard(g)
                    if not live:
                        return roots
    return roots


# -- inputs that are views of another input ----------------------------------------------------

def _inputs_as_views(trace, flat, info, candidates, roots, actual):
    """Note [inputs that are views of another input]: ``flat`` with each such input's uses renamed."""
    if not actual:
        return flat
    by_name = {p.name: p for p in trace.args if isinstance(p, TensorProxy)}
    swap: dict = {}
    made: list = []
    for group in candidates:
        members = sorted(roots.get(group, ()))
        if len(members) < 2 or not all(m in by_name and m in actual for m in members):
            continue
        for base in sorted(members, key=lambda m: -actual[m].numel()):
            chains = {m: relate(actual[base], actual[m]) for m in members if m != base}
            if all(c is not None for c in chains.values()):
                for m, chain in chains.items():
                    view, bsyms = _emit_chain(trace, by_name[base], chain)
                    made.extend(bsyms)
                    swap[variableify(by_name[m])] = view
                break
    if not swap:
        return flat
    renamed = {v.proxy.name for v in swap}
    out = []
    for b in flat:
        if made and b.sym.id is not _PrimIDs.UNPACK_TRIVIAL:  # (the views right after the inputs are bound)
            out.extend(made)
            made = []
        if b.sym.id in _NOT_ACCESSES or any(getattr(o, "name", None) in renamed for o in b.flat_outs):
            out.append(b)
        else:
            out.append(b.from_bsym_swap_proxies(swap))
    return out + made


def _emit(trace, fn):
    """Run ``fn`` (which calls prims) in ``trace``'s context; return its result and the bsyms it made."""
    scope: list = []
    with tracectx(trace):
        trace.push_scope(scope)
        try:
            result = fn()
        finally:
            trace.pop_scope()
    return result, scope


def _emit_chain(trace, base: TensorProxy, steps):
    def make():
        x = base
        for kind, *a in steps:
            if kind == "slice":
                x = prims.slice_prim(x, a[0], a[1], [1] * len(a[0]))
            elif kind == "squeeze":
                x = prims.squeeze(x, tuple(a[0]))
            elif kind == "permute":
                x = prims.transpose(x, tuple(a[0]))
            else:
                x = prims.reshape(x, tuple(a[0]))
        return x

    return _emit(trace, make)


# -- writes through views as base updates --------------------------------------------------------

def _writes_as_base_updates(trace, flat, info, is_fusible, written_views: dict, groups: set, roots: dict):
    """``flat`` with the writes into eligible groups (module Note) rewritten, or None if none is."""
    eligible = {g for g in groups if len(roots.get(g, ())) == 1}
    for b in flat:
        if not eligible:
            return None
        if ops.is_copy(b) and isinstance(b.args[1], TensorProxy):
            g = info.group(b.args[1].name)
            if g in eligible and (not is_fusible(b) or not invertible(info.chain[b.args[1].name])
                                  or not isinstance(b.args[0], (TensorProxy, int, float, bool, complex))):
                eligible.discard(g)
        elif not is_fusible(b) and may_write(b):
            for p in flattened(b)[3]:
                if p.name in info.root:
                    eligible.discard(info.group(p.name))
    if not eligible:
        return None
    proxies = tensor_proxies_by_name(flat, [p for p in trace.args if isinstance(p, TensorProxy)])
    views_only = _written_in_disjoint_views(flat, info, eligible, proxies)
    out: list = []
    for b in flat:
        if ops.is_copy(b) and isinstance(b.args[1], TensorProxy):
            dst = b.args[1]
            root = info.root[dst.name]
            g = info.group(dst.name)
            if g in eligible and root != dst.name and info.chain[dst.name]:
                base = proxies[root]
                out.extend(_base_update(trace, b, dst, base, info.chain[dst.name], written_views,
                                        write_view=g in views_only))
                continue
        out.append(b)
    return out


def _written_in_disjoint_views(flat, info, eligible: set, proxies) -> set:
    """Note [writes into disjoint views stay writes of the views]: the eligible groups whose
    writes all go to views that share no element (two rows of a matrix, two positions of a KV
    cache). Their writes stay where they were, each writing its view's elements only; what the
    base update adds is the base's new *value*, for the reads that follow, which then read no
    memory. A cache of 2 MiB with two rows written moves two rows, not the cache twice. A
    memory also written whole, or through views that overlap, is written as its base."""
    keys: dict[str, dict] = {}
    for b in _copies(flat):
        dst = b.args[1].name
        g = info.group(dst)
        if g in eligible:
            keys.setdefault(g, {}).setdefault(info.view_key[dst], dst)
    out = set()
    for g, by_key in keys.items():
        names = list(by_key.values())
        root = info.root[names[0]]
        if any(info.is_whole(n) for n in names):
            continue
        shape = tuple(proxies[root].shape)
        if any(math.prod(proxies[n].shape) == math.prod(shape) for n in names):
            continue  # a view of every element (``a.t()``): the base is written whole anyway
        boxes = [view_box(info, n, shape) for n in names]
        if all(boxes_disjoint(x, y) for i, x in enumerate(boxes) for y in boxes[i + 1:]):
            out.add(g)
    return out


def _zero(dtype):
    if dtypes.is_boolean_dtype(dtype):
        return False
    if dtypes.is_complex_dtype(dtype):
        return 0j
    if dtypes.is_float_dtype(dtype):
        return 0.0
    return 0


def _base_update(trace, copy, dst: TensorProxy, base: TensorProxy, chain, written_views: dict,
                 write_view: bool = False) -> list:
    """The symbols of ``copy_(src, dst)`` as a write of ``base`` (module Note), then ``copy``'s
    result made again as ``dst``'s view of the written base. With ``write_view`` (Note [writes
    into disjoint views stay writes of the views]): the base's new value, then ``copy`` itself."""

    def make():
        src = copy.args[0]
        value = src
        if not isinstance(value, TensorProxy):
            value = prims.full(tuple(dst.shape), value, device=dst.device, dtype=dst.dtype)
        if value.dtype != dst.dtype:
            value = prims.convert_element_type(value, dst.dtype)
        if tuple(value.shape) != tuple(dst.shape):  # a broadcasting write (``b.copy_(s)``, ``s`` 0-dim)
            lead = len(dst.shape) - len(value.shape)
            value = prims.broadcast_in_dim(value, tuple(dst.shape), tuple(range(lead, len(dst.shape))))
        view_value = value
        mask = None  # None: every element of the current view
        for step in reversed(chain):
            value, mask = _lift(step, value, mask)
        new = value if mask is None else prims.where(mask, value, base)
        return new, view_value

    (new, view_value), made = _emit(trace, make)
    if write_view:
        made.append(copy)
        written_views[copy.output.name] = (base.name, new)
        return made
    with tracectx(trace):
        written = TensorProxy(like=base)
    written_views[written.name] = (dst.name, view_value)
    made.append(copy.from_bsym(args=(new, base), output=written))
    # the old result's name: ``dst``'s view chain on the written base
    value = written
    with tracectx(trace):
        for i, step in enumerate(chain):
            out = copy.output if i == len(chain) - 1 else TensorProxy(like=step.output)
            made.append(step.from_bsym(args=(value, *step.args[1:]), output=out, subsymbols=[]))
            value = out
    return made


def _lift(step, value, mask):
    """``value`` and ``mask`` (the view's shape) placed back into the shape of ``step``'s argument."""
    pid = step.sym.id
    parent = step.args[0]
    shape = tuple(parent.shape)
    if pid is _PrimIDs.SHALLOW_COPY:
        return value, mask
    if pid is _PrimIDs.SLICE:
        starts, ends = step.args[1], step.args[2]
        config = tuple((s, n - e, 0) for s, e, n in zip(starts, ends, shape))
        if all(lo == 0 and hi == 0 for lo, hi, _ in config):
            return value, mask
        if mask is None:
            mask = prims.full(tuple(value.shape), True, device=value.device, dtype=dtypes.bool8)
        return prims.pad(value, _zero(value.dtype), config), prims.pad(mask, False, config)
    if pid is _PrimIDs.SQUEEZE:
        dims = set(d % len(shape) for d in step.args[1]) if shape else set()
        kept = tuple(d for d in range(len(shape)) if d not in dims)
        lift = lambda x: prims.broadcast_in_dim(x, shape, kept)  # noqa: E731
        return lift(value), (None if mask is None else lift(mask))
    if pid is _PrimIDs.TRANSPOSE:
        perm = step.args[1]
        inverse = tuple(sorted(range(len(perm)), key=lambda i: perm[i]))
        lift = lambda x: prims.transpose(x, inverse)  # noqa: E731
        return lift(value), (None if mask is None else lift(mask))
    # reshape, or a broadcast_in_dim that only adds dimensions of size 1 (view_relations.invertible)
    lift = lambda x: prims.reshape(x, shape)  # noqa: E731
    return lift(value), (None if mask is None else lift(mask))


# -- writes nobody reads before the next one ----------------------------------------------------

def drop_overwritten_writes(bsyms: list, info, is_fusible) -> list:
    """Note [a write nobody reads before a covering write]
    -----------------------------------------------------
    After base updates and read substitution, ``a[0].zero_(); a.copy_(b)`` is
    ``copy_(where(m, pad(0), a), a); copy_(b, a)``: the first write lands in
    memory that the second overwrites whole, and nothing reads the memory in
    between (reads of the first value were rewritten to read the value). The
    first write is dropped (``_dce`` then drops the ``where`` that only it
    read); kept, its read of ``a`` would not feed the write that lands, and the
    graph would cut between them. Kept as well: a write whose result name is
    still used (a later view of it names memory), and every write when an
    opaque symbol or any read of the group's memory comes between.
    """
    root, group, view_key = info.root, info.group, info.view_key
    copy_id = ops.COPY_ID
    used: set[str] = set()
    for b in bsyms:
        used.update(p.name for p in flattened(b)[1])
    pending: dict[str, int] = {}  # group -> its last write, not read since
    drop: set[int] = set()
    for i, b in enumerate(bsyms):
        if not pending:
            if b.sym.id is copy_id and isinstance(b.args[1], TensorProxy):
                pending[group(b.args[1].name)] = i
            continue
        if b.sym.id is copy_id and isinstance(b.args[1], TensorProxy):
            src = b.args[0]
            if isinstance(src, TensorProxy) and src.name in root:
                pending.pop(group(src.name), None)
            dst = b.args[1]
            g = group(dst.name)
            w = pending.get(g)
            if w is not None:
                earlier = bsyms[w].args[1]
                covered = view_key[earlier.name] == view_key[dst.name] or (
                    info.is_whole(dst.name) and root[earlier.name] == root[dst.name])
                if covered and is_fusible(b) and bsyms[w].output.name not in used:
                    drop.add(w)
            pending[g] = i
            continue
        if ops.is_view(b) or ops.is_update_aliases(b):
            continue
        if not is_fusible(b):
            pending.clear()
            continue
        for p in flattened(b)[3]:
            if p.name in root:
                pending.pop(group(p.name), None)
    if not drop:
        return bsyms
    return [b for i, b in enumerate(bsyms) if i not in drop]
