"""Rendering of a ``modules`` program (``gen_modules.py``) as the exact source the runner executes:
the module class, ``make_module``, the inputs of each call, the forward and the driver that calls it
over the aliasing variants and compares (Note [module programs] and Note [the repro is what ran] in
``gen_modules.py``)."""

from __future__ import annotations

from fusion_alias.fuzz.program import Program
from fusion_alias.fuzz import modules_view_rebinds, source
from fusion_alias.fuzz.source import COMPARE_SOURCE, _base_source, _make_jit_source


def _tag(p: Program, key: str) -> str:
    return dict(p.tags)[key]


def _forward_source(p: Program) -> str:
    entry = _tag(p, "entry")
    params = [n for n, _ in p.args]
    rets = "".join(r + ", " for r in p.returns).rstrip()
    body = []
    if p.hidden:
        body.append("    GT = GLOBAL_GT")
    body += [f"    {s.code}" for s in p.stmts]
    body.append(f"    return ({rets})")
    if entry == "self":
        lines = [f"    def forward(self, {', '.join(params)}):", "        m = self"]
        lines += ["    " + ln for ln in body]
        return "\n".join(lines) + "\n"
    head = [f"def prog(m, {', '.join(params)}):"] if entry == "arg" else [f"def prog({', '.join(params)}):", "    m = MOD"]
    return "\n".join(head + body) + "\n"


def _inputs_source(p: Program) -> str:
    lines = [
        "def make_inputs(variant, m):",
        '    """(bases, arguments, leaves that require grad, hidden tensors) of one call, over this side\'s module m."""',
        f"    g = torch.Generator().manual_seed({p.input_seed})",
    ] + (source._SPECIAL_SOURCE if source.SPECIAL_VALUES else [])  # (Note [special values in the inputs])
    leaves = []
    for name, shape in p.bases:
        made = _base_source(name, shape, "float32", p.grad)
        lines += made
        if len(made) == 2:
            leaves.append(f"{name}_leaf")
    for i, v in enumerate(p.all_variants):
        lines.append(f"    {'if' if i == 0 else 'elif'} variant == {i}:")
        lines += [f"        {h} = {e}" for h, e in v.hidden]
        lines += [f"        {n} = {e}" for n, e in v.args]  # (in order: k may be a view of a)
        lines += [f"        {st}" for st in v.state]  # (gen_modules.py, Note [state rebound between calls])
        lines.append(f"        args = [{', '.join(n for n, _ in v.args)}]")
    lines += ["    else:", "        raise ValueError(f'no variant {variant}')"]
    hidden = ", ".join(f"{h!r}: {h}" for h in p.hidden_names)
    lines.append(f"    return [{', '.join(n for n, _ in p.bases)}], args, [{', '.join(leaves)}], {{{hidden}}}")
    return "\n".join(lines) + "\n"


def program_source(p: Program, system: str = "fusion_alias", unsafe: bool = False) -> str:
    """The exact source the runner executes for a module program (Note [module programs])."""
    entry = _tag(p, "entry")
    src = _tag(p, "module_src")
    parts = ["import contextlib\nimport traceback\n\nimport torch\n\n\n", src]
    if entry == "self":
        parts.append("\n" + _forward_source(p))
    parts.append("\n\ndef make_module():\n"
                 f"    return Net(torch.Generator().manual_seed({_tag(p, 'module_seed')}))\n\n\n")
    parts.append("GLOBAL_GT = None\nMOD = None\n\n\ndef install(hidden, m):\n    global GLOBAL_GT, MOD\n"
                 "    GLOBAL_GT = hidden.get('GT')\n    MOD = m\n\n\n")
    parts.append(_inputs_source(p) + "\n\n")
    if entry != "self":
        parts.append(_forward_source(p) + "\n\n")
    parts.append(_make_jit_source(system, unsafe) + "\n")
    driver = MODULE_DRIVER.format(calls=p.calls, entry=entry, no_grad_call=p.no_grad_call, grad=p.grad)
    if modules_view_rebinds.MARKER in src:  # (Note [a buffer rebound to a view made in the call, generated])
        driver = modules_view_rebinds.with_object_checks(driver)
    parts.append(driver)
    return "".join(parts)


MODULE_DRIVER = '''
CALLS = {calls!r}  # the aliasing variant of each call
ENTRY = {entry!r}  # the jitted callable: the module ("self"), prog(m, ...) ("arg"), prog reading MOD ("global")
NO_GRAD_CALL = {no_grad_call!r}
GRAD = {grad!r}
''' + COMPARE_SOURCE + '''


def _qualname(e):
    return f"{{type(e).__module__}}.{{type(e).__qualname__}}"


def module_state(m):
    """name -> tensor: every parameter, buffer and tensor attribute of m and its submodules (tied names each)."""
    out = {{}}
    for prefix, mod in m.named_modules(remove_duplicate=False):
        items = list(mod._parameters.items()) + list(mod._buffers.items())
        items += [(k, v) for k, v in vars(mod).items() if isinstance(v, torch.Tensor)]
        for k, v in items:
            if v is not None:
                out[f"{{prefix}}.{{k}}".lstrip(".")] = v
    return dict(sorted(out.items()))


def state_layout(state):
    """Per state tensor: (its storage's index, offset, shape, strides, the first name of the same object,
    requires_grad, dtype)."""
    names, storages, out = list(state), [], []
    for n in names:
        t = state[n]
        ptr = t.untyped_storage().data_ptr()
        if ptr not in storages:
            storages.append(ptr)
        same = next(o for o in names if state[o] is t)
        out.append((n, storages.index(ptr), t.storage_offset(), tuple(t.shape), t.stride(), same, t.requires_grad, t.dtype))
    return out


def _params(m):
    return [p for _, p in sorted(m.named_parameters())]


def _call(fn, m, variant, backward=True):
    """One call on fresh arguments of ``variant`` (over this side's module m): a record of what to compare."""
    bases, args, leaves, hidden = make_inputs(variant, m)
    install(hidden, m)
    call_args = ([m] if ENTRY == "arg" else []) + args
    rec = dict(err=None, phase=None)
    try:
        with torch.no_grad() if NO_GRAD_CALL else contextlib.nullcontext():
            out = _as_list(fn(*call_args))
    except Exception as e:  # noqa: BLE001 - any exception counts as a rejection
        rec.update(err=e, phase="forward")
        return rec
    state = module_state(m)
    rec.update(out=[o.detach().clone() if isinstance(o, torch.Tensor) else o for o in out],
               args=[a.detach().clone() for a in args], bases=[b.detach().clone() for b in bases],
               hidden=[h.detach().clone() for h in hidden.values()],
               state=[t.detach().clone() for t in state.values()], layout=state_layout(state),
               flags=[o.requires_grad for o in out if isinstance(o, torch.Tensor)])
    if GRAD and backward and not NO_GRAD_CALL:
        try:
            weights = torch.Generator().manual_seed(1)
            diff = [o for o in out if isinstance(o, torch.Tensor) and o.requires_grad and o.is_floating_point()]
            if diff:
                sum((o * torch.rand(o.shape, generator=weights, dtype=o.dtype)).sum() for o in diff).backward()
        except Exception as e:  # noqa: BLE001
            rec.update(err=e, phase="backward")
            return rec
        # None (no gradient reached it) as zeros; the parameters' .grad accumulates over the calls
        rec["grads"] = [torch.zeros_like(t) if t.grad is None else t.grad.clone() for t in _params(m) + leaves]
    return rec


def check(schedule, make_jit=make_jit):
    """Eager vs jitted, one module object per side kept over every call of CALLS.
    Returns (status, detail); status is ok, both-raised, jit-raised, missed-rejection or mismatch."""
    m_want, m_got = make_module(), make_module()
    jitted = None
    compared, raised = 0, []
    for call, variant in enumerate(CALLS, 1):
        where = f"call {{call}} (aliasing variant {{variant}})"
        want = _call(m_want if ENTRY == "self" else prog, m_want, variant)
        if want["phase"] == "backward":
            return "both-raised", f"not comparable: eager's backward raised {{want['err']!r}}"
        if jitted is None:
            try:
                jitted = make_jit(m_got if ENTRY == "self" else prog, schedule)
            except Exception as e:  # noqa: BLE001
                if want["err"] is not None:
                    return "both-raised", repr(e)
                return "jit-raised", f"make_jit raised {{_qualname(e)}}:\\n" + "".join(traceback.format_exception(e))
        got = _call(jitted, m_got, variant)
        if want["err"] is not None:
            if got["err"] is None:
                return "missed-rejection", f"{{where}}: eager raised {{want['err']!r}}; the jitted call returned"
            raised.append(f"{{where}}: eager: {{want['err']!r}}; jitted: {{got['err']!r}}")
            break  # the two modules may differ by what ran before the raise: Note [module programs]
        if got["err"] is not None:
            return "jit-raised", (f"{{where}} ({{got['phase']}}) raised {{_qualname(got['err'])}}:\\n"
                                  + "".join(traceback.format_exception(got["err"])))
        checks = [("outputs", "out"), ("arguments after the call", "args"), ("base tensors after the call", "bases"),
                  ("the global after the call", "hidden"), ("module state after the call", "state")]
        if "grads" in want:
            checks.append(("parameter and leaf gradients (None as zeros)", "grads"))
        for what, key in checks:
            try:
                _assert_close(got[key], want[key])
            except AssertionError as e:
                names = list(module_state(m_want)) if key == "state" else None
                return "mismatch", f"{{where}}: {{what}} differ from eager" + (f" (state {{names}})" if names else "") + f":\\n{{e}}"
        if got["layout"] != want["layout"]:
            diff = [(g, w) for g, w in zip(got["layout"], want["layout"]) if g != w]
            return "mismatch", f"{{where}}: module state layout differs from eager (got, eager): {{diff}}"
        if got["flags"] != want["flags"]:
            return "mismatch", f"{{where}}: requires_grad of the outputs {{got['flags']}}, eager {{want['flags']}}"
        compared += 1
    if not compared:
        return "both-raised", "; ".join(raised)
    return "ok", ""
'''
