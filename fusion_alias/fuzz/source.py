"""Rendering a program as Python source: the hidden-tensor holders, ``make_inputs(variant)``,
``install_hidden(hidden)``, ``def prog(...)`` and ``make_jit(fn, schedule)``
(Note [the repro is what ran]).

Note [hidden tensors, rendered]
    A hidden tensor ``h`` is one the program reaches without an argument. Its
    holder lives at module level and ``install_hidden`` points it at this call's
    tensor before every call (eager and jitted alike), so that a hidden tensor can
    be unrelated to the arguments on one call and a view of one on the next:

        kind          holder                        the program's first lines
        global        GLOBAL_h = None               h = GLOBAL_h
        global_dict   G = {}                        h = G["h"]
        closure       a cell of _make_prog()        h = closure_h
        buffer        MOD_h = Buffers()             h = MOD_h()      (forward returns the buffer)
        attr          the argument o = Box(h=...)   h = o.h
"""

from __future__ import annotations

import math

from fusion_alias.fuzz import hidden_numbers, hidden_own_defaults
from fusion_alias.fuzz.program import ATTR_HOLDER, CONSTANTS, Program

_INT_DTYPES = ("int32", "int64", "int16", "int8", "uint8")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")

# Note [special values in the inputs]
#     With ``--special-values`` (``SPECIAL_VALUES``, session 31) every base of a program holds, beside its
#     usual seeded values, special ones at a quarter of its elements (at least one): for floating dtypes
#     NaN, the infinities, signed zeros, a number past float16's range and a float32 denormal; for
#     integer dtypes the dtype's extremes, 0 and -1; for complex dtypes NaN and infinite parts. The
#     positions and the values are drawn from the program's own generator ``g``, so the repro is still
#     what ran. ``special(t)`` writes them into a fresh base before it becomes a leaf::
#
#         x = special(torch.rand((3, 4), generator=g) * 2 - 1)   # e.g. [[nan, .3, -0., ...], ...]
#
#     The comparison is unchanged (NaN equals NaN; -0.0 equals 0.0, so signs of zero are not
#     compared): a region that computes an op differently at a special value than eager does
#     (``where(a > 0, a, 0)`` for ``relu(nan)``) shows as a mismatch. Off by default (the known
#     special-value differences are in docs/limits.md).
SPECIAL_VALUES = False  # set by the command line's --special-values


def constant(rng, special) -> str:
    """A number operand of a statement: one of ``CONSTANTS``, always drawn from ``rng``, or, with
    ``--special-values``, sometimes a special number in its place.

    Note [special numbers keep the stream]: with ``--special-values`` a third of the number operands
    become ``nan``, ``inf``, ``-inf`` or ``-0.0`` (``x.clamp_(min=nan)``, ``x.fill_(-inf)``,
    ``x.add_(y, alpha=inf)``), drawn from ``special``, a stream of their own, after ``rng``'s draw: so
    that without the option every seed's programs are the ones it always made."""
    c = repr(rng.choice(CONSTANTS))
    if SPECIAL_VALUES and special.random() < 1 / 3:
        c = special.choice(("float('nan')", "float('inf')", "-float('inf')", "-0.0"))
    return c


_SPECIAL_SOURCE = [
    "    def special(t):  # Note [special values in the inputs] (fusion_alias/fuzz/source.py)",
    "        if t.numel() == 0 or t.dtype == torch.bool:",
    "            return t",
    "        if t.dtype.is_floating_point:",
    "            vals = [float('nan'), float('inf'), -float('inf'), -0.0, 0.0, 1e5, 1e-40]",
    "        elif t.dtype.is_complex:",
    "            vals = [complex(float('nan'), 0.0), complex(float('inf'), 1.0), complex(0.0, -float('inf')), -0.0]",
    "        else:",
    "            info = torch.iinfo(t.dtype)",
    "            vals = [info.max, info.min, 0] + ([-1] if info.min < 0 else [])",
    "        k = max(1, t.numel() // 4)",
    "        at = torch.randperm(t.numel(), generator=g)[:k]",
    "        pick = torch.randint(len(vals), (k,), generator=g)",
    "        t = t.clone()",
    "        t.view(-1)[at] = torch.tensor([vals[int(i)] for i in pick], dtype=t.dtype)",
    "        return t",
]


def _base_source(name: str, shape: tuple[int, ...], dtype: str, grad: bool, how: str = "nonleaf") -> list[str]:
    """Lines that create base ``name``: seeded values of ``dtype`` (with ``grad``, ``how``: "nonleaf",
    ``*_leaf`` requires grad and the base is ``*_leaf * 1``; "leaf", the base itself requires grad;
    "leaf_view", the base is a view of flat values that do not require grad, and itself requires grad
    (a leaf with a ``_base``: gen_nograd.py), a view of the same values without ``grad``; "none", it does
    not)."""
    if how == "leaf_view" and not shape:  # (a 0-d base: a leaf of its own)
        how = "leaf"
    if how == "leaf_view" and dtype in FLOAT_DTYPES:  # the same values, drawn flat
        flat = _base_source(name, (math.prod(shape),), dtype, False)[0].split(" = ", 1)[1]
        return [f"    {name} = ({flat}).view{shape!r}" + (".requires_grad_()" if grad else "")]
    rand = f"torch.rand({shape!r}, generator=g)"
    if dtype == "float32":
        value = f"{rand} * 2 - 1"
    elif dtype in FLOAT_DTYPES:
        value = f"({rand} * 2 - 1).to(torch.{dtype})"
    elif dtype == "uint8":  # (no negative values: 0..16, so a subtraction wraps around)
        value = f"torch.randint(0, 17, {shape!r}, generator=g, dtype=torch.uint8)"
    elif dtype in _INT_DTYPES:
        value = f"torch.randint(-8, 9, {shape!r}, generator=g, dtype=torch.{dtype})"
    elif dtype == "bool":
        value = f"{rand} > 0.5"
    elif dtype.startswith("complex"):
        value = f"torch.complex({rand} * 2 - 1, {rand} * 2 - 1).to(torch.{dtype})"
    else:
        raise ValueError(f"fuzz: no generator of base values for dtype {dtype}")
    if SPECIAL_VALUES:  # Note [special values in the inputs]
        value = f"special({value})"
    if grad and dtype in FLOAT_DTYPES and how == "leaf":  # passed as it is: a leaf that requires grad
        return [f"    {name} = ({value}).requires_grad_()"]
    if grad and dtype in FLOAT_DTYPES and how == "nonleaf":  # a leaf that requires grad, and the base: a non-leaf eager may write into
        if dtype == "float32":
            value = f"({value})"
        return [f"    {name}_leaf = {value}.requires_grad_()", f"    {name} = {name}_leaf * 1"]
    return [f"    {name} = {value}"]


def _make_inputs_source(p: Program) -> str:
    lines = [
        "def make_inputs(variant=0, carried=None, wide=False):",
        '    """(bases, arguments, leaves that require grad, hidden tensors) of one call of the given aliasing'
        + (' (``carried``: the bases of CARRIED kept from the previous call)' if p.carried else '')
        + ' (``wide``: the float32 bases in float64, the same values)."""',
        f"    g = torch.Generator().manual_seed({p.input_seed})",
    ] + (_SPECIAL_SOURCE if SPECIAL_VALUES else [])
    leaves = []
    for name, shape in p.bases:
        how = p.grad_kind_of(name)
        made = _base_source(name, shape, p.dtype_of(name), p.grad, how)
        lines += made
        if len(made) == 2:
            leaves.append(f"{name}_leaf")
        elif made[0].endswith(".requires_grad_()"):
            leaves.append(name)
    wide = [n for n, _ in p.bases if p.dtype_of(n) == "float32"]
    if wide:  # Note [a rounding difference, checked against float64] (oracle.py)
        lines.append("    if wide:")
        lines += [f"        {n} = {n}.double()" for n in wide]
    carried = [n for n, _ in p.bases if n in p.carried]
    if carried:  # Note [training calls in the fuzzer]: a buffer kept from one step to the next
        lines.append("    if carried is not None:")
        lines += [f"        {n} = carried[{n!r}]" for n in carried]
    variants = p.all_variants
    for i, v in enumerate(variants):
        indent = "    "
        if len(variants) > 1:
            lines.append(f"    {'if' if i == 0 else 'elif'} variant == {i}:")
            indent = "        "
        lines += [f"{indent}{h} = {e}" for h, e in v.hidden]
        lines.append(f"{indent}args = [{', '.join(e for _, e in v.args)}]")
    if len(variants) > 1:
        lines.append("    else:")
        lines.append("        raise ValueError(f'no variant {variant}')")
    bases = ", ".join(n for n, _ in p.bases)
    hidden = ", ".join(f"{h!r}: {h}" for h in p.hidden_names)
    lines.append(f"    return [{bases}], args, [{', '.join(leaves)}], {{{hidden}}}")
    return "\n".join(lines) + "\n"


def _holders_source(p: Program) -> str:
    """Module-level holders of the hidden tensors, and ``install_hidden``."""
    kinds = {k for _, k, _ in p.hidden}
    lines = []
    if "global_dict" in kinds:
        lines.append("G = {}")
    lines += [hidden_numbers.holder(h, k) for h, k, _ in p.hidden if hidden_numbers.is_number(k)]  # (its Note)
    for h, k, _ in p.hidden:
        if k == "global":
            lines.append(f"GLOBAL_{h} = None")
    if "attr" in kinds:
        lines += ["", "", "class Box:", "    def __init__(self, **attrs):", "        self.__dict__.update(attrs)"]
    if "buffer" in kinds:
        lines += [
            "",
            "",
            "class Buffers(torch.nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            '        self.register_buffer("buf", torch.zeros(0))',
            "",
            "    def forward(self):",
            "        return self.buf",
            "",
            "",
        ]
        lines += [f"MOD_{h} = Buffers()" for h, k, _ in p.hidden if k == "buffer"]
    lines += ["", "", "def install_hidden(hidden):", '    """Point every holder at this call\'s hidden tensors."""']
    globals_ = [f"GLOBAL_{h}" for h, k, _ in p.hidden if k == "global"]
    if globals_:
        lines.append(f"    global {', '.join(globals_)}")
    body = []
    for h, k, _ in p.hidden:
        if k == "global":
            body.append(f"    GLOBAL_{h} = hidden[{h!r}]")
        elif k == "global_dict":
            body.append(f"    G[{h!r}] = hidden[{h!r}]")
        elif k == "buffer":
            body.append(f"    MOD_{h}.buf = hidden[{h!r}]")
        elif k == "closure":
            body.append(f"    SET_CLOSURE[{h!r}](hidden[{h!r}])")
        elif hidden_numbers.is_number(k):
            body.append(hidden_numbers.install(h, k))
    lines += body or ["    pass"]
    return "\n".join(lines).lstrip("\n") + "\n"


def _hidden_access(h: str, kind: str) -> str:
    if hidden_numbers.is_number(kind):
        return hidden_numbers.access(h, kind)
    return {
        "global": f"GLOBAL_{h}",
        "global_dict": f"G[{h!r}]",
        "closure": f"closure_{h}",
        "buffer": f"MOD_{h}()",
        "attr": f"{ATTR_HOLDER}.{h}",
    }[kind]


def _prog_source(p: Program) -> str:
    closures = [h for h, k, _ in p.hidden if k in hidden_numbers.CLOSURE_KINDS]
    pad = "    " if closures else ""
    params = list(p.params) + ["opts=DEFAULTS" for _, k, _ in p.hidden if k == "number_default"][:1]
    params += hidden_own_defaults.params(p.hidden)  # (its Note)
    lines = [f"{pad}def prog({', '.join(params)}):"]
    lines += [f"{pad}    {h} = {_hidden_access(h, k)}" for h, k, _ in p.hidden]
    lines += [f"{pad}    {s.code}" for s in p.stmts]
    lines.append(f"{pad}    return ({''.join(r + ', ' for r in p.returns).rstrip()})")
    if not closures:
        return "\n".join(lines) + "\n"
    head = ["def _make_prog():", '    """prog, and a setter per closure cell it reads."""']
    head += [f"    closure_{h} = None" for h in closures]
    for h in closures:
        head += ["", f"    def set_{h}(value):", f"        nonlocal closure_{h}", f"        closure_{h} = value"]
    setters = ", ".join(f"{h!r}: set_{h}" for h in closures)
    tail = [f"    return prog, {{{setters}}}", "", "", "prog, SET_CLOSURE = _make_prog()"]
    return "\n".join(head + [""] + lines + tail) + "\n"


def _make_jit_source(system: str, unsafe: bool) -> str:
    if system == "fusion_alias":
        extra = ", unsafe_ignore_hazards=True" if unsafe else ""
        body = (
            "    import fusion_alias\n"
            f'    return fusion_alias.jit(fn, backend="reference", schedule=schedule{extra})\n'
        )
    elif system == "thunder":
        body = "    import thunder\n    return thunder.jit(fn)\n"
    elif system == "thunder-skip":
        body = "    import thunder\n    return thunder.jit(fn, skip_inplace_alias_updates=True)\n"
    elif system == "eager":
        body = "    return fn\n"
    else:  # a Python callable given to the API; not renderable
        body = "    raise NotImplementedError('custom system under test: supply make_jit')\n"
    return "def make_jit(fn, schedule):\n" + body


# The comparison helpers of a repro script's driver (oracle._DRIVER, modules_source.MODULE_DRIVER), as
# template text for ``str.format`` (braces doubled): eager's values against the system's, with the
# tolerance of a low-precision dtype.
COMPARE_SOURCE = '''_LOW_PRECISION = {{torch.float16: 1e-2, torch.bfloat16: 4e-2}}


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _assert_close(got, want):
    if len(got) != len(want):
        raise AssertionError(f"{{len(got)}} values, eager has {{len(want)}}")
    for i, (g, w) in enumerate(zip(got, want)):
        tol = _LOW_PRECISION.get(w.dtype) if isinstance(w, torch.Tensor) else None
        kw = dict(rtol=tol, atol=tol) if tol else {{}}
        try:
            torch.testing.assert_close(g, w, equal_nan=True, **kw)
        except (AssertionError, TypeError, ValueError) as e:  # (TypeError: a stored proxy, not a tensor)
            raise AssertionError(f"value {{i}}: {{e}}") from None
'''
