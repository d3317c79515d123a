"""Which trace inputs may share memory: from the actual call's tensors, or from what Thunder says."""

from __future__ import annotations

import torch
import thunder
from thunder.core.proxies import TensorProxy, variableify

from fusion_alias import ops
from fusion_alias.leaked_proxies import proxy_left_in, refuse_leak


def _input_groups(trace, ctx, tensor_inputs):
    """Groups of trace-input names that may overlap, and name -> actual tensor (if known)."""
    names = [p.name for p in tensor_inputs]
    if ctx.has_call:
        from thunder.core.compile_data import _compile_data
        from fusion_alias.components import overlap_groups

        cd, cs = _compile_data.get()
        # (an entry replaced while tracing, in an argument or in what the function reaches: the prologue below
        # would fail on the proxy with Thunder's "expected Tensor, got TensorProxy"; leaked_proxies.py)
        if (leak := proxy_left_in(ctx.fn, ctx.args, ctx.kwargs)) is not None:
            refuse_leak(*leak)
        try:
            inps, _ = cs.last_prologue(*ctx.args, **ctx.kwargs)
        except (KeyError, IndexError, AttributeError) as e:  # Note [a prologue that cannot read what was traced]
            raise prologue_lookup_error(e) from e
        ctx.saw_inputs(inps)  # the guard keys the program by what it reads (api.py)
        actual = {}
        for p, x in zip(trace.args, inps):
            if isinstance(p, TensorProxy) and isinstance(x, torch.Tensor):
                actual[p.name] = x
        tensors = [actual[n] for n in names if n in actual]
        known = [n for n in names if n in actual]
        groups = [[known[i] for i in g] for g in overlap_groups(tensors)]
        missing = [n for n in names if n not in actual]
        if missing:  # could not match an input: it may alias anything
            groups.append(names)
        return groups, actual
    try:
        alias_indices = thunder._get_cache_info().get("alias_tensor_indices")
    except LookupError:  # not inside a thunder.jit compilation
        alias_indices = None
    if alias_indices == "":
        return [], {}
    # Thunder saw aliased arguments (or did not tell): any two inputs may overlap.
    return ([names] if len(names) > 1 else []), {}


# Note [a prologue that cannot read what was traced]
# ---------------------------------------------------
# Thunder's prologue unpacks every input the program reached, by the path the interpreter took to it. A
# module's hook dicts are read on the ThunderModule Thunder made of the module, which holds no hooks, so a
# global that the program reaches only through a hook's function was unpacked from a dict that lacks the
# hook's key::
#
#     G = torch.zeros(4)
#     def pre(mod, args): G.add_(1); return args
#     m.register_forward_pre_hook(pre); f = fusion_alias.jit(m); f(x)
#     # prologue: obj1 = module._forward_pre_hooks; subscr2 = obj1[0]  -> KeyError: 0
#
# (session 46; plain ``thunder.jit`` raises the same ``KeyError: 0``. With a hook dict replaced between calls,
# ``m._forward_pre_hooks = OrderedDict({9002: pre})``, plain ``thunder.jit`` kept running the first call's
# program, silently; fusion_alias compiles anew (module_tables.py) and its prologue raised ``KeyError: 9002``.)
# The compile runs the new prologue on the call's own arguments, which it was traced from, so a failed lookup
# there is the prologue's, never the user's: it is raised as a NotImplementedError that says so and shows the
# prologue's lines that failed, not as a bare ``KeyError: 0``.


def prologue_lookup_error(e: BaseException) -> NotImplementedError:
    """The error for a lookup that failed in this compile's prologue (Note [a prologue that cannot read what was
    traced]): ``e``, the prologue line that raised it, and the prologue lines that made the names it reads."""
    import linecache
    import re
    import traceback

    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith("thunder.prologue")]
    shown = ""
    if frames:
        f = frames[-1]
        lines = linecache.getlines(f.filename)
        failing = (f.line or "").strip()
        rhs = failing.split("=", 1)[-1]
        made = [ln.strip() for ln in lines[: max(f.lineno - 1, 0)]
                if (m := re.match(r"\s*(\w+)\s*(?::[^=]*)?=", ln)) and re.search(rf"\b{m.group(1)}\b", rhs)]
        shown = " at:\n    " + "\n    ".join([*made, failing])
    hooks = " It reads a module's hook dicts on the ThunderModule, which holds none: a tensor that the program reaches " \
            "only through a module hook's function (its globals or closure) cannot be unpacked; pass it as an argument " \
            "or a module buffer instead." if "hooks" in shown else ""
    return NotImplementedError(
        f"fusion_alias.jit: Thunder's prologue cannot read an input the program reached, on the arguments it was traced "
        f"from ({type(e).__name__}: {e}){shown}\n(a limit of Thunder 0.2.6's prologue.){hooks}")


# Note [the same tensor passed twice is one memory]
# -------------------------------------------------
# ::
#
#     def f(x, y): x.add_(1); y.add_(1); return x * 2      # called with (t, t)
#
# ``x`` and ``y`` are the very same memory: same storage, offset, sizes, strides
# and dtype (tied parameters in an optimizer step, an EMA of a model with itself).
# Kept as two names, every write into one is a hazard for reads and writes of the
# other, and the program took 3 regions. Taken as one name (``y`` a view of ``x``
# with no steps), reads of ``y`` after ``x.add_(1)`` read the written value, both
# writes land in one write-back of the final value, and it takes 1 region.
# Eager: ``t + 2`` written into ``t``, returned doubled. ``read_through_first``
# also renames every use of ``y`` but the ``return`` to ``x``, so a region reads
# the memory once, through one input (a tied SGD step read each tied gradient
# twice, 1.33x its traffic lower bound). The decision holds for
# every call with the same guard key: equal offsets and equal layouts inside
# one component are in the key (``guard.py``).


def identical_inputs(tensor_inputs, actual: dict) -> list[tuple[str, str]]:
    """``(name, first name)`` for each input that is the very same memory as an earlier one
    (Note [the same tensor passed twice is one memory])."""
    first: dict = {}
    pairs = []
    for p in tensor_inputs:
        t = actual.get(p.name)
        if t is None or t.layout is not torch.strided or t.device.type == "meta":
            continue
        try:
            # with gradients, only the very same tensor object: two leaves (or histories) over one
            # memory get their gradients apart, and renaming one to the other would merge them
            key = (t.untyped_storage().data_ptr(), t.device, t.storage_offset(), tuple(t.shape), t.stride(), t.dtype,
                   t.is_conj(), t.is_neg(), id(t) if t.requires_grad else None)
        except Exception:  # a tensor without storage (a subclass): not the same as anything
            continue
        if t.numel() == 0:
            continue
        if key in first:
            pairs.append((p.name, first[key]))
        else:
            first[key] = p.name
    return pairs


def read_through_first(flat: list, pairs: list[tuple[str, str]], tensor_inputs) -> list:
    """``flat`` with each use of an input of ``pairs`` (``identical_inputs``) renamed to the first
    input of its memory, except in the ``return``, which keeps handing back the caller's tensor."""
    if not pairs:
        return flat
    by_name = {p.name: p for p in tensor_inputs}
    swap = {variableify(by_name[name]): by_name[of] for name, of in pairs if name in by_name and of in by_name}
    renamed = {name for name, _ in pairs}
    # the return, where the inputs are bound, and the joint trace's gradient markers (Thunder's
    # split pairs ``get_grad(h0)`` with the output ``h0`` by name: renamed, it raised KeyError)
    keep = (ops.PrimIDs.RETURN, ops.PrimIDs.UNPACK_TRIVIAL, ops.PrimIDs.GET_GRAD, ops.PrimIDs.PUT_GRAD)
    return [
        b if b.sym.id in keep or any(getattr(o, "name", None) in renamed for o in b.flat_outs)
        else b.from_bsym_swap_proxies(swap)
        for b in flat
    ]
