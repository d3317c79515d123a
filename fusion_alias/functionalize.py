"""Read substitution: rewrite reads of written memory to the values written.

After ``t1 = copy_(t0, a)`` the trace (traced with
``skip_inplace_alias_updates=True``) may go on reading ``a``, or a view of
``a`` made earlier, meaning "a's memory now". Inside one fusion region every
tensor is an SSA value, so such a read would see the stale input. Where the
new contents are known as a value, this pass rewrites the read to that value,
replaying view prims on it where the read is of a view. What it cannot
rewrite stays a read of memory, and the dependency graph puts a
read-after-write hazard on it.

Note [what can be substituted]
------------------------------
Per memory group we keep ``known``: view key → proxy holding that view's
current contents. A write ``copy_(v, d)`` resets it to ``{key(d): v}``: the
write changes d's elements, and, since d may overlap every other member of
its group, nothing else of the group is known any more. A read of ``p`` is
rewritten when ``key(p)`` is known, or when the root's key is known and
``p``'s view chain can be replayed on the root's value. Worked example
(seed program g)::

    b = shallow_copy(a)        # b is the same view as a
    t1 = copy_(exp(a), a)      # known = {a: t0}
    t2 = tanh(b)               # rewritten to tanh(t0)
    t3 = copy_(t2, b)          # known = {a: t2}   (b is the same view as a)
    mul(t1, t3)                # rewritten to mul(t2, t2): one region, no cut

With ``b = a[0, 0]`` instead (seed h), ``tanh(b)`` becomes
``tanh(squeeze(slice(t0)))`` but after ``copy_(t2, b)`` only ``b``'s elements
are known, so ``mul(t1, ...)`` must read ``a``'s memory: a hazard, a cut.

Only inputs of fusible compute ops and the source of ``copy_`` are rewritten.
View prims keep their memory argument (they name memory, they do not read
it), and ops that run outside regions read memory as eager PyTorch does.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Sequence

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol
from thunder.core.trace import TraceCtx

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, may_write, shape_reader, tensor_args
from fusion_alias.new_args import replayed, with_new_args
from fusion_alias.new_values import tensor_like
from fusion_alias.placed_symbols import _Placed  # (tests import it from here)


def substitute_reads(
    trace: TraceCtx,
    bsyms: Sequence[BoundSymbol],
    info: AliasInfo,
    is_fusible: Callable[[BoundSymbol], bool],
    written_views: dict | None = None,
) -> list[BoundSymbol]:
    """Return ``bsyms`` with reads rewritten to known values (see module Note).

    ``written_views`` (``base_updates.rewrite``): a write's result name -> ``(view, value)``, a view
    of the written memory whose contents the write also makes known.

    New view prims (replays) are inserted right before the read that needs
    them; ``info`` is extended with their outputs.
    """
    known: dict[str, dict[tuple, TensorProxy]] = {}
    # value proxy's group → (group, key) entries that hold it, to drop them
    # when the value's own memory is written
    holders: dict[str, list[tuple[str, tuple]]] = {}
    out: list[BoundSymbol] = []  # (the walk's symbols; pushed-down reads are placed beside them: _Placed)
    placed = _Placed(out, info.view_key)
    # Note [no reference cycles in the stage]: the helpers below are closures over these dicts, and
    # none refers to itself (the walk into tuples and lists is ``_rewritten``, outside): when the
    # stage returns, reference counting frees them at once. A recursive closure held ``known``,
    # ``holders`` and every list in them in a cycle that only the cyclic collector freed, scanning
    # each object (tens of thousands of sets and tuples at 100k bsyms).

    root, view_key, chain_of = info.root, info.view_key, info.chain
    group_of, asked = info.group, info.groups_asked()

    def forget(group: str) -> None:
        known.pop(group, None)
        for g, k in holders.pop(group, ()):
            entry = known.get(g)
            if entry is not None:
                entry.pop(k, None)

    def remember(group: str, key: tuple, value: TensorProxy) -> None:
        entry = known.get(group)
        if entry is None:
            known[group] = {key: value}
        else:
            entry[key] = value
        name = value._name  # (aliasing.py, Note [proxy names read directly])
        value_group = asked.get(name) or group_of(name)  # (``info.group``, its cache read inline)
        held = holders.get(value_group)
        if held is None:  # (a list: an entry held twice is dropped twice, and no key is hashed again)
            holders[value_group] = [(group, key)]
        else:
            held.append((group, key))

    def resolve(p: TensorProxy) -> TensorProxy:
        name = p._name
        if not known or name not in root:
            return p
        group = asked.get(name) or group_of(name)
        entry = known.get(group)
        if not entry:
            return p
        key = view_key[name]
        value = entry.get(key)  # (a value is a proxy, never None)
        if value is not None:
            return value
        chain = chain_of[name]
        if not chain:  # the root itself, not known (its key was the one looked up)
            return p
        base = entry.get((root[name], ()))
        if base is None:
            return p
        value = _pushed_down(trace, placed, base, chain, info, is_fusible, _PUSH_DEPTH)
        if value is None:
            value = placed.existing_view(base, chain, info, None)
        if value is None:
            value = _replay(trace, placed, None, base, chain, info, is_fusible)
        remember(group, key, value)
        return value

    def rewrite_args(bsym: BoundSymbol, first_only: bool) -> BoundSymbol:
        """``bsym`` reading resolved values (all arguments, or only the first); itself when none changes."""
        args = bsym.args
        new_args = None  # a copy of args, made at the first change
        for i, a in enumerate(args[:1] if first_only else args):
            if isinstance(a, TensorProxy):
                new = resolve(a)
            elif isinstance(a, (tuple, list)):
                new = _rewritten(a, resolve)
            else:
                continue  # (a number, a dtype, None: nothing to resolve)
            if new is not a:
                if new_args is None:
                    new_args = list(args)
                new_args[i] = new
        if new_args is None:
            return bsym
        return with_new_args(bsym, tuple(new_args))

    copy_id, update_aliases_id, view_addrs = ops.COPY_ID, ops.UPDATE_ALIASES_ID, ops._VIEW_ADDRS
    inherit = getattr(is_fusible, "inherit", None)  # Note [a rewritten symbol claimed as the one it rewrites] (executor.py)
    shape_of = shape_reader()
    append = out.append
    position, views = placed.position, placed.views  # (Note [the walk indexes what it lays], placed_symbols.py)
    for bsym in bsyms:
        sym_id = bsym.sym.id
        if sym_id is copy_id:
            src = bsym.args[0]
            if not known:
                new = bsym
            elif isinstance(src, TensorProxy):  # (rewrite_args(bsym, True), its usual case inlined)
                value = resolve(src)
                new = bsym if value is src else with_new_args(bsym, (value, *bsym.args[1:]))
            else:
                new = rewrite_args(bsym, True)
            if new is not bsym and inherit is not None:
                inherit(new, bsym)
            append(new)
            dst = bsym.args[1]
            group = asked.get(dst._name) or group_of(dst._name)
            if group in known or group in holders:
                forget(group)
            src = new.args[0]
            # a broadcasting write (``b.copy_(s)`` with a 0-dim ``s``) leaves a value of dst's shape,
            # not ``s``: later reads keep reading the written buffer (fuzz seed 1 #1249)
            if isinstance(src, TensorProxy) and shape_of(src) == shape_of(dst):
                remember(group, view_key[dst._name], src)
            extra = written_views.get(bsym.output.name) if written_views else None
            if extra is not None:
                view, value = extra
                remember(group, view_key[view], resolve(value) if isinstance(value, TensorProxy) else value)
            continue
        if id(sym_id) in view_addrs:  # (ops.is_view)
            append(bsym)
            o = bsym.output
            if isinstance(o, TensorProxy):
                name = o._name
                position[name] = len(out) - 1
                key = view_key.get(name)
                if key is not None:
                    views.setdefault(key, o)  # (the first view with the key: the earliest made)
            continue
        if sym_id is update_aliases_id:  # (ops.is_update_aliases)
            append(bsym)
            continue
        if is_fusible(bsym):
            new = bsym if not known else rewrite_args(bsym, False)  # (nothing known: nothing to rewrite)
            if new is not bsym and inherit is not None:
                inherit(new, bsym)
            append(new)
            o = new.output
            if isinstance(o, TensorProxy):
                position[o._name] = len(out) - 1
            continue
        append(bsym)
        targs = tensor_args(bsym)  # (an unpack of an input has none: asked first, may_write walks the tags)
        if targs and may_write(bsym):
            for a in targs:
                forget(group_of(a.name))
    return placed.in_order()


def _rewritten(x, resolve):
    """``x`` (an argument) with its tensor proxies resolved; the very same object when none changes."""
    if isinstance(x, TensorProxy):
        return resolve(x)
    if isinstance(x, (tuple, list)):
        items = [_rewritten(y, resolve) for y in x]
        if all(a is b for a, b in zip(items, x)):
            return x
        return type(x)(items)
    return x


def _replay(trace, placed: _Placed, anchor, value: TensorProxy, chain, info: AliasInfo, is_fusible) -> TensorProxy:
    """``chain`` replayed on ``value``, its symbols placed right before ``anchor`` (a symbol; None:
    after every symbol so far); the last view."""
    made = []
    inherit = getattr(is_fusible, "inherit", None)
    # each replayed step is the chain's step on another value: its view step is the step's own,
    # read from the view key of the chain's last view (aliasing.add_alias)
    keys = info.view_key.get(chain[-1].output._name)
    keys = keys[1] if keys is not None and len(keys[1]) == len(chain) else (None,) * len(chain)
    for step, key in zip(chain, keys):
        keeps = isinstance(step.args[0], TensorProxy) and step.args[0].dtype == step.output.dtype
        new_out = tensor_like(trace, step.output, dtype=value.dtype if keeps else None)  # (the view of a bool is bool)
        replay = replayed(step, (value, *step.args[1:]), new_out)
        if inherit is not None:
            inherit(replay, step)
        made.append(replay)
        info.add_alias(new_out._name, value._name, replay, key)
        value = new_out
    placed.before(anchor, made)
    return value


_PUSH_DEPTH = 4


def _pushed_down(trace, placed: _Placed, base: TensorProxy, chain, info: AliasInfo, is_fusible, depth: int):
    """Note [a view of a value is computed from the view of its operands]
    ----------------------------------------------------------------------
    A read of ``b = a[0, 0]`` after ``t2 = exp(a); copy_(t2, a)`` is ``t2``'s view,
    ``squeeze(slice(t2))``: it moves elements of a value computed from ``a``, so
    it cannot share a region with the write (graph.py, Note [elements moved
    from written memory]), and ``t2`` (all of it) is handed over in a buffer.
    Where ``t2`` is an elementwise op of operands of its own shape, the view is
    computed instead as that op of the operands' views, placed right after the
    op (where the operands hold what the op read)::

        t2 = exp(a); e = exp(squeeze(slice(a))); copy_(t2, a); ... tanh(e)

    The region that reads ``a[0, 0]`` now reads one element, before the write;
    the one that writes ``a`` reads ``a`` only elementwise. Done only where the
    view is smaller than the value (a recomputation of the few elements read),
    through at most ``_PUSH_DEPTH`` elementwise ops; None otherwise.
    """
    shape_of = placed.shape_of  # (aliasing.py, Note [shapes read directly])
    if depth == 0 or not isinstance(base, TensorProxy) or math.prod(shape_of(chain[-1].output)) >= math.prod(shape_of(base)):
        return None
    return _pushed_down_smaller(trace, placed, base, chain, info, is_fusible, depth)


def _pushed_down_smaller(trace, placed: _Placed, base: TensorProxy, chain, info: AliasInfo, is_fusible, depth: int):
    """``_pushed_down`` of a ``base`` the view is smaller than. Its operands are of its shape: the
    view is smaller than each of them too, so they go down without the sizes compared again."""
    shape_of = placed.shape_of
    producer = placed.producer_of(base._name)
    if producer is None:
        return None
    kind = ops.op_info(producer)
    if kind is None or kind.kind != "elementwise" or not is_fusible(producer):
        return None
    shape = shape_of(base)
    args = []
    for a in producer.args:
        if isinstance(a, TensorProxy):
            if shape_of(a) != shape:
                return None
        elif not isinstance(a, (int, float, bool, complex)):
            return None
    for a in producer.args:
        if not isinstance(a, TensorProxy):
            args.append(a)
            continue
        view = _pushed_down_smaller(trace, placed, a, chain, info, is_fusible, depth - 1) if depth > 1 else None
        if view is None:
            view = placed.existing_view(a, chain, info, producer)
        if view is None:
            view = _replay(trace, placed, producer, a, chain, info, is_fusible)
        args.append(view)
    # the view's shape, the op's dtype: a view of a float memory pushed through ``gt`` is bool
    # (fuzz seed 20827 #43, found on nvFuser, whose ``where`` refused the float condition)
    result = tensor_like(trace, chain[-1].output, dtype=base.dtype)
    pushed = replayed(producer, tuple(args), result)
    inherit = getattr(is_fusible, "inherit", None)
    if inherit is not None:
        inherit(pushed, producer)
    placed.after(producer, pushed)
    info.add_root(result._name)
    return result
