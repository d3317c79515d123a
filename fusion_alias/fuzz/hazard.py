"""Running a program eagerly statement by statement: the memory each variable
covers, and whether the program has an alias hazard."""

from __future__ import annotations

import torch

from fusion_alias.fuzz.program import Program, Stmt
from fusion_alias.fuzz.source import _holders_source, _make_inputs_source


def _build_inputs(p: Program, variant: int = 0):
    """(bases, args) of ``p``'s call with aliasing ``variant``, without gradients."""
    bases, args, _ = _build_call(p, variant)
    return bases, args


def _build_call(p: Program, variant: int = 0):
    """(bases, args, hidden tensors by name) of ``p``'s call with aliasing ``variant``, without gradients."""
    ns: dict = {"torch": torch}
    src = _holders_source(p) + "\n\n" + _make_inputs_source(p.replace(grad=False))
    exec(compile(src, "<fuzz make_inputs>", "exec"), ns)
    bases, args, _, hidden = ns["make_inputs"](variant)
    return bases, args, hidden


def eager_env(p: Program, variant: int = 0) -> dict:
    """The variables the body starts with, for the call with aliasing ``variant``:
    the parameters and the hidden tensors, by name."""
    _, args, hidden = _build_call(p, variant)
    return {**dict(zip(p.params, args)), **hidden}


def _element_set(t: torch.Tensor) -> tuple[int, frozenset]:
    """(storage pointer, set of storage element offsets) of ``t``."""
    st = t.untyped_storage()
    n = st.nbytes() // t.element_size()
    idx = torch.arange(max(n, 1)).as_strided(t.size(), t.stride(), t.storage_offset())
    return st.data_ptr(), frozenset(idx.flatten().tolist())


def _overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    px, ex = _element_set(x)
    py, ey = _element_set(y)
    return px == py and not ex.isdisjoint(ey)


def _has_internal_overlap(t: torch.Tensor) -> bool:
    return len(_element_set(t)[1]) < t.numel()


def _same_layout(dst: torch.Tensor, src: torch.Tensor) -> bool:
    """Whether ``src``, broadcast to ``dst``'s shape, reads each element of
    ``dst``'s memory at the same index that ``dst`` writes it."""
    try:
        src = src.expand(dst.shape)
    except RuntimeError:
        return False
    if dst.numel() == 0:
        return True
    if dst.data_ptr() != src.data_ptr():
        return False
    return all(n <= 1 or a == b for n, a, b in zip(dst.shape, dst.stride(), src.stride()))


def _ill_defined(s: Stmt, env: dict) -> bool:
    """Whether eager's result for ``s`` depends on its iteration order.

    Note [partial overlap within one op]
        An in-place op whose operand overlaps its destination at *different*
        indices (``b.mul_(a)`` with ``a = x[:, 1]``, ``b = x.t()``) has no
        defined result: PyTorch documents it as undefined and only rejects
        the cases its overlap check can prove. Eager CPU happens to run
        row-major, a fused kernel reads first, CUDA races. Such statements
        are not generated: the eager oracle would be arbitrary. An operand
        that *is* the destination (same memory, same index: ``a.add_(a)``,
        or ``a.add_(b)`` with ``b`` the same tensor passed twice) is fine.
    """
    if s.writes is None:
        return False
    try:
        dst = eval(s.code.split(" = ")[0], dict(_EXEC_GLOBALS), env) if s.target is None and " = " in s.code else env[s.writes]
    except Exception:  # noqa: BLE001
        return False
    for v in s.reads:
        t = env.get(v)
        if isinstance(t, torch.Tensor) and _overlaps(dst, t) and not _same_layout(dst, t):
            return True
    return False


_EXEC_GLOBALS = {"torch": torch}


def _exec_stmt(s: Stmt, env: dict) -> None:
    exec(s.code, _EXEC_GLOBALS, env)


def has_alias_hazard(p: Program) -> bool:
    """Whether ``p`` has an alias hazard (see Note [alias hazard, syntactically]).

    Runs ``p`` eagerly statement by statement to learn each variable's memory;
    statements after an eager error are ignored. A program called with several
    aliasings (``p.variants``) has a hazard when one of its calls has.
    """
    if p.kind == "modules":  # Note [module programs] (gen_modules.py)
        from fusion_alias.fuzz.gen_modules import has_hazard

        return has_hazard(p)
    return any(_has_alias_hazard(p, v) for v in range(len(p.all_variants)))


def _has_alias_hazard(p: Program, variant: int) -> bool:
    env = eager_env(p, variant)
    identity = {name: name for name in env}
    accesses: list[tuple[str, str]] = []  # (kind, var) in program order
    for s in p.stmts:
        try:
            _exec_stmt(s, env)
        except Exception:  # noqa: BLE001
            break
        accesses += [("read", r) for r in s.reads]
        if s.writes is not None:
            accesses.append(("write", s.writes))
        if s.target is not None:
            # (``.get``: a name bound beside the target, ``t4, t5 = torch._foreach_add(...)``, is its own identity:
            # foreach_functions.py; ``t5.add_(1)``'s result had none, fuzz seed 36219, hidden --grad)
            identity[s.target] = identity.get(s.writes, s.writes) if s.inplace_result else s.target
    else:
        accesses += [("read", r) for r in p.returns if r in env]
    written = {v for k, v in accesses if k == "write"}
    read = {v for k, v in accesses if k == "read"}
    for w in written:
        for r in read:
            if identity.get(r, r) == identity.get(w, w):
                continue
            if isinstance(env.get(r), torch.Tensor) and _overlaps(env[w], env[r]):
                return True
    return False
