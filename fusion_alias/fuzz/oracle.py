"""The oracle: eager PyTorch on fresh inputs against the system under test, for
every schedule of the reference backend (``fusion_alias.backends.reference.SCHEDULES``),
on every call of a program (first, cached, and each change of aliasing); outputs,
arguments, bases and hidden tensors compared (and leaf gradients with ``--grad``)."""

from __future__ import annotations

import re
import warnings
from typing import Callable, Sequence

from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.fuzz import modules_process
from fusion_alias.fuzz.program import Program
from fusion_alias.fuzz import disjoint_views  # (strict backward: Note [disjoint views of one base, after independent tensors])
from fusion_alias.fuzz import keyword_spellings  # (--keyword-spellings: Note [keyword spellings respell the rendered program])
from fusion_alias.fuzz.source import COMPARE_SOURCE, _holders_source, _make_inputs_source, _make_jit_source, _prog_source

MakeJit = Callable[[Callable, str], Callable]


# Note [gradients in the fuzzer]
#     With ``--grad`` (``Program.grad``), every base is ``leaf * 1`` with a leaf
#     that requires grad, so eager accepts writes into the arguments. After each
#     call, a fixed random weighting of the outputs that require grad is summed
#     and back-propagated, and the leaves' gradients are compared with eager's
#     (a missing gradient counts as zeros: eager keeps a zero-gradient edge through
#     ``t0 = -b; t0.copy_(a)`` where Thunder has none). An error eager raises only in the
#     backward (a tensor saved for it was overwritten) makes the program not
#     comparable: it counts as both-raised (with ``--strict-backward``, and in the
#     programs of disjoint_views.py's form, it is a rejection the jitted call must
#     make too: Note [disjoint views of one base, after independent tensors]). Refusals count as unsupported, and
#     every program fusion_alias accepts must match eager's values and gradients.
# Note [calls with changing aliasing]
#     A program is called several times on one jitted function: variant 0
#     twice (the compile, then the cache), then each later variant (the same
#     shapes, other memory sharing: independent -> the same tensor -> transposed
#     -> ...), then variant 0 again. Each call is compared with eager on fresh
#     inputs of its own variant, so a guard that reuses a program compiled for
#     other aliasing, or a check decided at compile time and not re-made, shows
#     as a mismatch or a missed rejection on the call where it happens. Eager may
#     raise on one variant and not on another: the jitted call must follow, call
#     by call.
#
# Note [low-precision tolerance]
#     float16/bfloat16 results are compared with a wider tolerance (a fused
#     region may keep an intermediate in float32 where eager rounds it), every
#     other dtype with assert_close's defaults; dtypes must match exactly.
# Note [a rounding difference, checked against float64]
#     float32 programs that square and add a value several times (``torch._foreach_addcmul_`` of one
#     tensor thrice, then ``mul(b, b, out=b)``: fuzz seed 20808 #118) reach a few hundred, where
#     another order of the same float32 operations differs from eager's by more than assert_close's
#     rtol of 1.3e-6, on a correct program. So where float32 values differ, eager runs the call once
#     more on the same inputs in float64 (``make_inputs(wide=True)``: the float32 bases as float64,
#     every argument made from them as before) and the difference is rounding when, element by
#     element, the jitted value is at most four times as far from the float64 one as eager's float32
#     value is, plus assert_close's tolerance. Not for calls with CARRIED bases (their earlier calls
#     would need the float64 run too), not for gradients, and not where the float64 run raises or gives
#     another dtype than float64 for a float32 value: the mismatch then stands.
# Note [training calls in the fuzzer] (the oracle's part; the programs: gen_train.py)
#     Four flags of a program (all off for every generator but ``train``) extend the oracle
#     above to the ways a training loop calls a function:
#       * ``NO_GRAD_CALL``: eager and the jitted function are each called under
#         ``torch.no_grad()`` (with inputs that may require grad, e.g. a parameter ``p``
#         passed as the leaf itself); no backward;
#       * ``LOSS_READS_ARGS``: the loss also reads every argument that requires grad *after*
#         the call (``out = f(a, b); (a.sum() + out.sum()).backward()``), so a write-back
#         that lost a history shows in the leaves' gradients;
#       * ``CARRIED``: these bases are made on the first call and passed again, as mutated
#         by it, on every later call (a running statistic, an optimizer buffer), each side
#         its own; the backward of every call runs;
#       * ``CHECK_REQUIRES_GRAD``: ``requires_grad`` of the outputs, the arguments and the
#         bases right after the call must be eager's (a buffer that got a history, an output
#         of a no_grad call that requires grad).
# Note [statements fusion_alias must refuse]
#     A statement may say fusion_alias must refuse any program that holds it (``Stmt.must_refuse``: a Python
#     decision on an ``x.item()``, which a trace fixes at the first call: item_branches.py, gen_item.py).
#     Such a program's calls are compared as every other's, and where the jitted calls all returned (each
#     value eager's: the branch the first call took happened to be right) the program counts as a
#     ``missed-rejection`` all the same. ``MUST_REFUSE`` lists the reasons, empty for every other program
#     and for the stand-in systems (eager, plain Thunder), which run them.
# Note [outputs written after the call]
#     With ``--write-outputs`` (``WRITE_OUTPUTS``, session 30) each side, after the call and its backward, writes
#     into every output in place, in order, under ``torch.no_grad()`` (``o.add_(i + 1)``; a bool output
#     ``logical_not_``), as a caller may (``out = f(x); out.add_(1)``), before outputs, arguments, bases and
#     hidden tensors are compared. An output that eager makes a view of an input, of another output, or the
#     same tensor as another output, and the jitted call returns as other memory (or the reverse), then shows
#     as a mismatch: ``y.exp_(), y`` returned as two tensors, ``(x + w).copy_(w)`` returned as the caller's ``w``
#     (session 30 probes, gradients on). A later write eager raises on (an expanded output) makes the call not
#     comparable; one only the jitted side raises on is a jit-raised failure (phase "later write"). Not for the
#     ``modules`` generator (its own driver).
WRITE_OUTPUTS = False  # set by the command line's --write-outputs
KEYWORD_CALLS = False  # set by the command line's --keyword-calls: Note [arguments passed by keyword]

# Note [arguments passed by keyword]
# ----------------------------------
# Every generated call passed the program's arguments by position, so the jitted wrapper's handling of
# keyword arguments (its guard's fast path for plain numbers, lists and dicts by keyword, the filler of
# defaults, keyword_fn.py's mover) was never compared with eager by the fuzzer (session 39: a default named
# ``fn`` failed on every call). With ``--keyword-calls`` (``KEYWORD_CALLS``) the k-th call of each side passes
# its last k arguments by their parameter names (the first call one, the next two, ...), so one program's calls
# also change how they are spelled between calls, and the cache must key them apart or alike correctly. The
# program's parameters are renamed first to names the wrappers on the way take for their own (``self``, ``fn``,
# ...: :func:`_renamed_parameters`), where ``jitted(x, self=y)`` and ``jitted(x, fn=y)`` failed before session 39
# (api.py; keyword_fn.py, Note [a keyword argument named fn]); not ``args`` or ``kwargs``, which Thunder's prologue
# cannot take for a tensor (keyword_fn.py, Note [a tensor parameter named args or kwargs]: refused). Module
# programs (their own driver, gen_modules.py) are called as before.
_WRAPPER_NAMES = ("self", "fn", "cls", "key", "func", "name")


def _renamed_parameters(src: str) -> str:
    """``src`` with the leading parameters of its ``prog`` renamed to :data:`_WRAPPER_NAMES` not used in it
    (Note [arguments passed by keyword])."""
    import ast

    tree = ast.parse(src)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    prog = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "prog")
    free = [name for name in _WRAPPER_NAMES if name not in used]
    inputs = prog.args.args[: len(prog.args.args) - len(prog.args.defaults)]  # (not a hidden number's default)
    mapping = {a.arg: name for a, name in zip(inputs, free)}
    for node in ast.walk(prog):
        if isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]
        elif isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
    return ast.unparse(tree) + "\n"

_DRIVER = '''
CALLS = {calls!r}  # the aliasing variant of each call: Note [calls with changing aliasing]
WRITE_OUTPUTS = {write_outputs!r}  # Note [outputs written after the call] (oracle.py)
# Note [training calls in the fuzzer] (oracle.py)
NO_GRAD_CALL = {no_grad_call!r}
LOSS_READS_ARGS = {loss_reads_args!r}
CARRIED = {carried!r}
CHECK_REQUIRES_GRAD = {check_requires_grad!r}
MUST_REFUSE = {must_refuse!r}  # Note [statements fusion_alias must refuse] (oracle.py)
BASE_NAMES = {base_names!r}
''' + COMPARE_SOURCE + '''


def _stored(args):
    """The entries of the list and dict arguments, after the call: per container its keys (as codes)
    and its values in key order (a value that is not a tensor fails the comparison)."""
    out = []
    for a in args:
        if isinstance(a, list):
            out += [torch.tensor(len(a))] + [v.detach() if isinstance(v, torch.Tensor) else v for v in a]
        elif isinstance(a, dict):
            keys = sorted(a)
            out += [torch.tensor([sum(map(ord, str(k))) for k in keys])]
            out += [a[k].detach() if isinstance(a[k], torch.Tensor) else a[k] for k in keys]
    return out


def _qualname(e):
    return f"{{type(e).__module__}}.{{type(e).__qualname__}}"


def _requires_grad(*groups):
    return [[t.requires_grad for t in ts if isinstance(t, torch.Tensor)] for ts in groups]


def _rounding_only(got, want, wide):
    \"\"\"Whether ``got`` differs from eager's ``want`` by rounding only: Note [a rounding difference, checked
    against float64]. Values other than float32 tensors must still be close as before.\"\"\"
    if wide is None or len(got) != len(want) or len(wide) != len(want):
        return False
    for g, w, w64 in zip(got, want, wide):
        if not (isinstance(w, torch.Tensor) and w.dtype == torch.float32):
            try:
                _assert_close([g], [w])
            except AssertionError:
                return False
            continue
        if not (isinstance(g, torch.Tensor) and g.dtype == torch.float32 and isinstance(w64, torch.Tensor)
                and w64.dtype == torch.float64 and g.shape == w.shape == w64.shape):
            return False
        g64, w32 = g.detach().double(), w.detach().double()
        w64 = w64.detach()
        bound = 4 * (w32 - w64).abs() + 1e-5 + 1.3e-6 * w64.abs()
        fine = ((g64 - w64).abs() <= bound) | (g64.isnan() & w32.isnan()) | (g64 == w32)
        if not bool(fine.all()):
            return False
    return True


def _run(fn, variant, state=None, wide=False):
    \"\"\"(outputs, bases, args, hidden, leaf gradients, error, phase of the error, requires_grad flags)
    of one call on fresh inputs (the bases of CARRIED: kept in ``state`` from this side's previous call;
    ``wide``: the float32 bases in float64).\"\"\"
    state = {{}} if state is None else state
    # leaves: --grad, the leaves the bases come from
    bases, args, leaves, hidden = make_inputs(variant, state.get("carried"), wide)
    if CARRIED:
        state["carried"] = {{n: b for n, b in zip(BASE_NAMES, bases) if n in CARRIED}}
    install_hidden(hidden)
    hidden = list(hidden.values())
    flags = None
    torch.manual_seed(0)  # the same numbers for both sides' draws: Note [random draws in the fuzzer] (gen_fresh.py)
    try:
        if NO_GRAD_CALL:
            with torch.no_grad():
                out = _as_list(fn(*args))
        else:
            out = _as_list(fn(*args))
        # an attribute holder's tensors are hidden ones; a list or dict argument's entries are compared
        # (after the tensors): Note [one class per program, and the refusals it may get] (gen_edges.py)
        args = [a for a in args if isinstance(a, torch.Tensor)] + _stored(args)
    except Exception as e:  # noqa: BLE001 - any exception counts as a rejection
        return None, bases, args, hidden, None, e, "forward", None
    if CHECK_REQUIRES_GRAD:
        flags = _requires_grad(out, args, bases)
    if leaves and not NO_GRAD_CALL:
        try:
            weights = torch.Generator().manual_seed(1)
            diff = [o for o in out if isinstance(o, torch.Tensor) and o.requires_grad]
            if LOSS_READS_ARGS:
                diff += [a for a in args if a.requires_grad]
            if diff:
                sum((o * torch.rand(o.shape, generator=weights, dtype=o.dtype)).sum() for o in diff).backward()
        except Exception as e:  # noqa: BLE001
            return None, bases, args, hidden, None, e, "backward", flags
    if leaves:
        out = [o.detach() if isinstance(o, torch.Tensor) else o for o in out]
    # None (no gradient reached the leaf) as zeros of the leaf's own shape and dtype: the bases list
    # also holds tensors with no leaf (an int input), so zeros made from it misaligned (seed 14004 #87)
    grads = [torch.zeros_like(leaf) if leaf.grad is None else leaf.grad for leaf in leaves]
    if WRITE_OUTPUTS:  # Note [outputs written after the call] (oracle.py)
        try:
            with torch.no_grad():
                for i, o in enumerate(out):
                    if isinstance(o, torch.Tensor):
                        o.logical_not_() if o.dtype == torch.bool else o.add_(i + 1)
        except Exception as e:  # noqa: BLE001
            return None, bases, args, hidden, None, e, "later write", flags
    return out, bases, args, hidden, grads, None, None, flags


def check(schedule, make_jit=make_jit):
    \"\"\"Eager vs jitted on fresh inputs, one jitted function called once per entry of CALLS.
    Returns (status, detail); status is ok, both-raised, jit-raised, missed-rejection or mismatch.\"\"\"
    jitted = None
    compared, raised = 0, []
    want_state, got_state = {{}}, {{}}  # CARRIED bases of each side, from one call to the next
    for call, variant in enumerate(CALLS, 1):
        where = f"call {{call}}" + (f" (aliasing variant {{variant}})" if len(set(CALLS)) > 1 else "")
        want, want_bases, want_args, want_hidden, want_grads, want_err, want_phase, want_flags = _run(
            prog, variant, want_state)
        if want_phase in ("backward", "later write"):
            return "both-raised", f"not comparable: eager's {{want_phase}} raised {{want_err!r}}"
        if jitted is None:
            try:
                jitted = make_jit(prog, schedule)
            except Exception as e:  # noqa: BLE001
                if want_err is not None:
                    return "both-raised", repr(e)
                return "jit-raised", f"make_jit raised {{_qualname(e)}}:\\n" + "".join(traceback.format_exception(e))
        got, got_bases, got_args, got_hidden, got_grads, got_err, got_phase, got_flags = _run(
            jitted, variant, got_state)
        if want_err is not None:
            if got_err is None:
                return "missed-rejection", f"{{where}}: eager raised {{want_err!r}}; the jitted call returned"
            raised.append(f"{{where}}: eager: {{want_err!r}}; jitted: {{got_err!r}}")
            continue
        if got_err is not None:
            return "jit-raised", (f"{{where}} ({{got_phase}}) raised {{_qualname(got_err)}}:\\n"
                                  + "".join(traceback.format_exception(got_err)))
        checks = [("outputs", got, want), ("arguments after the call", got_args, want_args),
                  ("base tensors after the call", got_bases, want_bases),
                  ("hidden tensors after the call", got_hidden, want_hidden)]
        if want_grads:  # None (no gradient flowed) stands for zeros: see Note [gradients in the fuzzer]
            checks.append(("leaf gradients (None as zeros)", got_grads, want_grads))
        wide = None
        for k, (what, g, w) in enumerate(checks):
            try:
                _assert_close(g, w)
            except AssertionError as e:
                if k < 4 and not CARRIED:  # Note [a rounding difference, checked against float64]
                    wide = _run(prog, variant, None, wide=True) if wide is None else wide
                    if wide[5] is None and _rounding_only(g, w, [wide[0], wide[2], wide[1], wide[3]][k]):
                        continue
                return "mismatch", f"{{where}}: {{what}} differ from eager:\\n{{e}}"
        if got_flags != want_flags:  # (after the values: a lost write shows as one)
            kinds = ("outputs", "arguments", "bases")
            return "mismatch", (f"{{where}}: requires_grad after the call differs from eager: "
                                + "; ".join(f"{{k}} {{g}}, eager {{w}}" for k, g, w in zip(kinds, got_flags, want_flags)))
        compared += 1
    if not compared:
        return "both-raised", "; ".join(raised)
    if MUST_REFUSE:
        return "missed-rejection", (f"the jitted calls returned ({{compared}} compared with eager, all equal), where "
                                    f"fusion_alias must refuse the program: {{MUST_REFUSE[0]}}")
    return "ok", ""
'''

# (appended to the driver with --keyword-calls: Note [arguments passed by keyword]; off, the source is as before)
_KEYWORD_CALLS_SOURCE = '''

def _spelled(args, state):
    """(positional, keyword) arguments of this side's next call: Note [arguments passed by keyword] (oracle.py)."""
    import inspect

    state["calls"] = k = state.get("calls", 0) + 1
    params = list(inspect.signature(prog).parameters.values())[:len(args)]
    if len(params) < len(args) or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        return list(args), {}
    cut = max(0, len(args) - k)
    return list(args[:cut]), {p.name: a for p, a in zip(params[cut:], args[cut:])}


_run_by_position = _run


def _run(fn, variant, state=None, wide=False):
    if state is None or wide:  # (eager's float64 rerun: spelled as it likes)
        return _run_by_position(fn, variant, state, wide)

    def spelled(*args):
        positional, keywords = _spelled(args, state)
        return fn(*positional, **keywords)

    return _run_by_position(spelled, variant, state, wide)
'''

FAILING_STATUSES = ("mismatch", "missed-rejection", "jit-raised")


def program_source(p: Program, system: str = "fusion_alias", unsafe: bool = False) -> str:
    """The exact source the runner executes: hidden holders, inputs, program, jit, driver."""
    if p.kind == "modules":  # its own rendering and driver: Note [module programs] (gen_modules.py)
        from fusion_alias.fuzz import gen_modules

        return gen_modules.program_source(p, system, unsafe)
    return (
        "import traceback\n\nimport torch\n\n\n"
        + _holders_source(p)
        + "\n\n"
        + _make_inputs_source(p)
        + "\n\n"
        + _renamed_if_keyword_calls(
            keyword_spellings.respelled(_prog_source(p), p.name) if keyword_spellings.ENABLED else _prog_source(p))
        + "\n\n"
        + _make_jit_source(system, unsafe)
        + "\n"
        + _DRIVER.format(calls=p.calls, no_grad_call=p.no_grad_call, loss_reads_args=p.loss_reads_args,
                         carried=tuple(n for n, _ in p.bases if n in p.carried),
                         check_requires_grad=p.check_requires_grad, base_names=tuple(n for n, _ in p.bases),
                         must_refuse=_must_refuse(p, system), write_outputs=WRITE_OUTPUTS)
        + (_KEYWORD_CALLS_SOURCE if KEYWORD_CALLS else "")
        + (disjoint_views.STRICT_BACKWARD_SOURCE if disjoint_views.strict(p) else "")  # (disjoint_views.py)
    )


def _renamed_if_keyword_calls(src: str) -> str:
    return _renamed_parameters(src) if KEYWORD_CALLS else src


def _must_refuse(p: Program, system: str) -> tuple[str, ...]:
    """Note [statements fusion_alias must refuse]: the reasons, for fusion_alias only (eager and plain Thunder,
    the stand-ins, run such programs)."""
    if system != "fusion_alias":
        return ()
    return tuple(dict.fromkeys(s.must_refuse for s in p.stmts if s.must_refuse))


def repro_source(p: Program, schedules: Sequence[str], system: str = "fusion_alias", unsafe: bool = False) -> str:
    """A self-contained script: ``program_source`` plus a ``__main__`` block (exit 1 on a failure:
    a wrong value, a missed raise, or a raise eager does not make)."""
    return (
        f"# fusion_alias fuzz repro: program {p.name} ({p.kind})\n"
        + program_source(p, system, unsafe)
        + "\n\nif __name__ == \"__main__\":\n"
        + "    failed = False\n"
        + f"    for schedule in {tuple(schedules)!r}:\n"
        + "        status, detail = check(schedule)\n"
        + "        print(schedule, status, detail)\n"
        + f"        failed |= status in {FAILING_STATUSES!r}\n"
        + "    raise SystemExit(1 if failed else 0)\n"
    )


def _load(p: Program, system: str, unsafe: bool) -> dict:
    src = program_source(p, system, unsafe)
    ns: dict = {"__name__": f"fusion_alias_fuzz_program"}
    exec(compile(src, f"<fuzz program {p.name}>", "exec"), ns)
    return ns


def run_program(
    p: Program, schedule: str, system: str = "fusion_alias", unsafe: bool = False, make_jit: MakeJit | None = None
) -> tuple[str, str]:
    """Run ``p``'s own ``check(schedule)``: returns (status, detail). Each run starts from the process's default
    settings and leaves the process as it found it (modules_process.py: a module program may change them)."""
    with modules_process.isolated(), warnings.catch_warnings():
        ns = _load(p, system, unsafe)
        warnings.simplefilter("ignore")
        if make_jit is not None:
            return ns["check"](schedule, make_jit)
        return ns["check"](schedule)


def exception_type(detail: str) -> str | None:
    """The qualified exception type a ``jit-raised`` detail names (``"... raised builtins.AttributeError:"``)."""
    m = re.search(r" raised ([\w.<>]+):", detail)
    return m.group(1) if m else None


def _is_unsupported(detail: str) -> bool:
    low = detail.lower()
    return any(
        k in low
        for k in ("notimplemented", "not supported", "unsupported", "not implemented", "unknown attribute")
    )
