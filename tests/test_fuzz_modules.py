"""The modules generator (gen_modules.py, Note [module programs]): its programs hold the classes it is
for, agree with themselves eagerly, run against fusion_alias, and its oracle catches a planted bug."""

import copy
import re

import torch

from fusion_alias import fuzz
from fusion_alias.fuzz import gen_modules


def _programs(n=40, seed=3, grad=False):
    return [fuzz.generate_program(seed, i, generators=("modules",), grad=grad) for i in range(n)]


def test_programs_hold_the_classes():
    ps = _programs() + _programs(20, seed=4, grad=True)
    src = "\n".join(fuzz.program_source(p) for p in ps)
    for piece in (r"torch\.nn\.Parameter\(flat\[", r"self\.flat = torch\.nn\.Parameter\(flat", r"self\.lin\.weight = self\.w",
                  r"self\.head = self\.w", r"register_buffer\(\"u\", flat\[", r"with torch\.no_grad\(\): ",
                  r"with torch\.enable_grad\(\): ", r"with torch\.set_grad_enabled\(False\): ", r"m\.kv\[\d\] = ",
                  r"m\.kv\[torch\.tensor", r"index_copy_", r"m\.ema\.", r"m\.run_(mean|var)\.", r"GT = GLOBAL_GT",
                  r"\.data\b", r"\.grad if ", r"def forward\(self, a, k\)", r"def prog\(m, a, k\)", r"m = MOD"):
        assert re.search(piece, src), piece
    # later calls: arguments and the global over the module's state
    later = [e for p in ps for v in p.variants for _, e in v.args + v.hidden]
    assert sum(e.startswith("m.") for e in later) > len(later) // 3
    assert any(p.no_grad_call for p in ps)
    assert all(p.calls == (0, 0, 1, 2, 0) for p in ps)
    assert fuzz.generate_program(3, 5, generators=("modules",)) == ps[5]  # deterministic
    # not drawn among the others: the default streams stay as they were
    assert all(fuzz.generate_program(3, i).kind != "modules" for i in range(40))


def test_programs_agree_with_themselves_eagerly():
    for grad in (False, True):
        report = fuzz.run_fuzz(programs=25, seed=8, system="eager", generators=("modules",), grad=grad)
        assert not report.failures and not report.jit_errors, [f.detail for f in report.failures]
        assert report.ok >= 15, report.summary()


def test_short_run_against_fusion_alias():
    """A deterministic run (10 programs, one schedule, about 30 s): no wrong value, no missed rejection,
    no unexpected error; the refusals are clear ones."""
    report = fuzz.run_fuzz(programs=10, seed=20101, schedules=("reads-first",), generators=("modules",),
                           do_shrink=False, log=print)
    msgs = "\n\n".join(f"{f.status} [{f.schedule}]\n{f.repro}\n{f.detail}" for f in report.failures)
    assert not report.failures, msgs
    assert report.ok >= 3, report.summary()


def _restores_module_state(fn, schedule):
    """A broken system: eager, except that every write into the module's state is undone after the call."""

    def run(*args):
        m = fn if isinstance(fn, torch.nn.Module) else args[0] if args and isinstance(args[0], torch.nn.Module) \
            else fn.__globals__["MOD"]
        state = gen_modules_state(m)
        saved = [t.detach().clone() for t in state]
        out = fn(*args)
        with torch.no_grad():
            for t, s in zip(state, saved):
                t.copy_(s)
        return out

    return run


def gen_modules_state(m):
    return [t for t in {id(t): t for t in list(m.parameters()) + list(m.buffers())}.values()]


def _deep_copied(fn, schedule):
    """A broken system: the module called is a deep copy of the one given (copy.deepcopy copies a Parameter's
    data apart from the flat tensor it was a view of, so a write through one no longer reaches the other)."""
    if isinstance(fn, torch.nn.Module):
        return copy.deepcopy(fn)
    copies = {}

    def run(*args):
        if args and isinstance(args[0], torch.nn.Module):
            m = copies.setdefault(id(args[0]), copy.deepcopy(args[0]))
            return fn(m, *args[1:])
        return fn(*args)

    return run


def test_oracle_catches_lost_module_writes():
    report = fuzz.run_fuzz(programs=6, seed=8, make_jit=_restores_module_state, generators=("modules",),
                           do_shrink=False, stop_after_failures=1)
    assert report.mismatches, report.summary()
    assert "module state" in report.mismatches[0].detail or "differ from eager" in report.mismatches[0].detail


def test_oracle_catches_a_deep_copied_module():
    report = fuzz.run_fuzz(programs=12, seed=8, make_jit=_deep_copied, generators=("modules",), do_shrink=False,
                           stop_after_failures=1)
    assert report.mismatches, report.summary()


def test_ill_defined_writes_are_not_generated():
    """An in-place op reading memory it writes at other indices that eager does not reject is found."""
    flat = torch.arange(8.0)
    mode = gen_modules._IllDefined()
    with mode:
        flat[0:4].copy_(flat[0:4])  # the same elements: defined
    assert not mode.found
    with mode:
        flat[0:4].masked_scatter_(torch.tensor([True, True, False, False]), flat[1:3])  # eager does not reject it
    assert mode.found
    mode = gen_modules._IllDefined()
    try:
        with mode:
            flat[0:4].copy_(flat[1:5])  # eager rejects it: a defined outcome
    except RuntimeError:
        pass
    assert not mode.found


_REBIND = re.compile(r"(?:^|: )m\.(ema|mom|run_mean|steps|kv|scale) = ")


def test_programs_rebind_buffers_of_the_module_called_and_of_others(monkeypatch):
    """Note [rebinding a buffer] (session 16): updates of the state that rebind it to a new tensor, on the module
    called (entry "self") and on one that is not (an argument, a global)."""
    from fusion_alias.fuzz import modules_hook_dicts, modules_values

    monkeypatch.setattr(modules_values, "P_VALUES", 0.0)  # (session 35's forms take statements' places)
    monkeypatch.setattr(modules_hook_dicts, "P_HOOK_DICTS", 0.0)
    ps = _programs(60, seed=20450)  # (60 since session 32: some programs now hold Python state, modules_outside.py)
    rebinding = [p for p in ps if any(_REBIND.search(s.code) for s in p.stmts)]
    assert len(rebinding) >= 10
    assert {dict(p.tags)["entry"] for p in rebinding} == set(gen_modules.ENTRIES)
    code = "\n".join(s.code for p in rebinding for s in p.stmts)
    for piece in ("m.steps = m.steps + 1", "m.kv = torch.cat(", ".detach()\n", "m.kv = m.kv.index_copy("):
        assert piece in code + "\n", piece


def _drops_rebinds(fn, schedule):
    """A broken system: eager, except that a buffer rebound to a new tensor keeps its old one (Thunder 0.2.6's
    bug, Note [a buffer rebound on the module called])."""

    def run(*args):
        m = fn if isinstance(fn, torch.nn.Module) else args[0] if args and isinstance(args[0], torch.nn.Module) \
            else fn.__globals__["MOD"]
        before = {(id(mod), k): (mod, t) for mod in m.modules() for k, t in mod._buffers.items()}
        out = fn(*args)
        for (_, k), (mod, t) in before.items():
            mod._buffers[k] = t
        return out

    return run


def test_oracle_catches_a_dropped_rebinding():
    ps = _programs(40, seed=20450)
    first = next(i for i, p in enumerate(ps) if dict(p.tags)["entry"] == "self"
                 and any(_REBIND.search(s.code) and "m.scale" not in s.code for s in p.stmts))
    report = fuzz.run_fuzz(seed=20450, only=[first], make_jit=_drops_rebinds, generators=("modules",),
                           do_shrink=False, stop_after_failures=1)
    assert report.mismatches, report.summary()


_BETWEEN = ("m.u = k", "m.run_mean = m.b.detach()", "m.b = torch.nn.Parameter(", "m.lin.weight = ", "m.kv = m.kv.clone()")


def test_programs_rebind_state_between_calls():
    """Note [state rebound between calls] (modules_calls.py, session 17): before the calls of variants 1 and 2, a
    parameter or buffer (of the submodule ``lin`` too) rebound outside the compiled function; a program with no
    rebinding drawn is the one it was."""
    ps = _programs(60, seed=20450)
    rebinding = [p for p in ps if any(v.state for v in p.variants)]
    assert len(rebinding) >= 15
    src = "\n".join(fuzz.program_source(p) for p in rebinding)
    for piece in _BETWEEN:
        assert piece in src, piece
    assert all(v.state == () or all(isinstance(st, str) for st in v.state) for p in ps for v in p.variants)


def _stale_state(fn, schedule):
    """A broken system: eager, except that every call reads the parameters and buffers the module had at the first
    call (a compiled program blind to state rebound between calls)."""
    first: dict = {}

    def run(*args):
        m = fn if isinstance(fn, torch.nn.Module) else args[0] if args and isinstance(args[0], torch.nn.Module) \
            else fn.__globals__["MOD"]
        tables = [(mod, table) for mod in m.modules() for table in (mod._parameters, mod._buffers)]
        if not first:
            first.update({(id(table), k): t for _, table in tables for k, t in table.items()})
        for _, table in tables:
            for k in table:
                table[k] = first.get((id(table), k), table[k])
        return fn(*args)

    return run


def test_oracle_catches_state_rebound_between_calls_read_stale():
    ps = _programs(60, seed=20450)
    picks = [i for i, p in enumerate(ps) if dict(p.tags)["entry"] == "self"
             and any(st.startswith(("m.u = k", "m.run_mean = k")) for v in p.variants for st in v.state)]
    assert picks
    report = fuzz.run_fuzz(seed=20450, only=picks[:3], make_jit=_stale_state, generators=("modules",),
                           do_shrink=False)
    assert report.mismatches, report.summary()
