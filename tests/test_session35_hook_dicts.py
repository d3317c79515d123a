"""Session 35: a module's hook dict replaced between calls (module_tables.py, Note [a hook dict replaced on the
module]): ``m._forward_hooks = OrderedDict()`` removes every hook at once, ``m._forward_pre_hooks =
OrderedDict({k: hook})`` sets one. The held dicts did not change, so the program kept running the first call's hooks,
silently (plain ``thunder.jit`` too). Each test compares with eager at every call, outputs and the written input,
under both reference schedules."""

import collections

import pytest
import torch
import torch.nn.modules.module as module_globals

import fusion_alias

SCHEDULES = ["reads-first", "writes-first"]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.sub = torch.nn.Linear(3, 3)
        self.register_buffer("buf", torch.ones(3))

    def forward(self, x):
        x.mul_(2)
        return self.sub(x) + self.buf


def _scale_output(mod, args, out):
    return out * 10


def _zero_input(mod, args):
    return (args[0] * 0,)


CHANGES = {
    "forward hooks cleared": [lambda m: m.sub.register_forward_hook(_scale_output),
                              lambda m: setattr(m.sub, "_forward_hooks", collections.OrderedDict())],
    "pre-hooks set": [lambda m: setattr(m.sub, "_forward_pre_hooks", collections.OrderedDict({999: _zero_input})),
                      lambda m: setattr(m.sub, "_forward_pre_hooks", collections.OrderedDict())],
    "root's hooks set": [lambda m: setattr(m, "_forward_hooks", collections.OrderedDict({998: _scale_output})),
                         lambda m: setattr(m, "_forward_hooks", collections.OrderedDict())],
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_a_hook_dict_replaced_between_calls(kind, schedule):
    eager, mod = Net(), Net()
    jitted = fusion_alias.jit(mod, backend="reference", schedule=schedule)
    for change in [None, *CHANGES[kind], None]:
        if change is not None:
            change(eager)
            change(mod)
        xe, xj = torch.ones(3), torch.ones(3)
        with torch.no_grad():
            want, got = eager(xe), jitted(xj)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(xj, xe)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_torch_global_hook_dict_replaced(schedule, monkeypatch):
    eager, mod = Net(), Net()
    jitted = fusion_alias.jit(mod, backend="reference", schedule=schedule)
    saved = module_globals._global_forward_hooks
    try:
        for step in range(3):
            if step == 1:
                monkeypatch.setattr(module_globals, "_global_forward_hooks", collections.OrderedDict({997: _scale_output}))
            if step == 2:
                monkeypatch.setattr(module_globals, "_global_forward_hooks", collections.OrderedDict())
            xe, xj = torch.ones(3), torch.ones(3)
            with torch.no_grad():
                want, got = eager(xe), jitted(xj)
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(xj, xe)
    finally:
        module_globals._global_forward_hooks = saved


def test_unchanged_hook_dicts_compile_once():
    mod = Net()
    jitted = fusion_alias.jit(mod, backend="reference")
    with torch.no_grad():
        for _ in range(3):
            jitted(torch.ones(3))
    assert jitted.compiled_structures == 1


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("grad", [False, True])
def test_a_global_hook_runs_once_per_module(schedule, grad):
    """(module_tables.py, Note [torch's global hooks and the ThunderModule]): the hook ran once more, on the
    ThunderModule's output."""
    calls = []

    def hook(mod, args, out):
        calls.append(type(mod).__name__)
        return out * 10

    eager, mod = Net(), Net()
    jitted = fusion_alias.jit(mod, backend="reference", schedule=schedule)
    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        for _ in range(2):
            calls.clear()
            xe, xj = torch.ones(3), torch.ones(3)
            with torch.set_grad_enabled(grad):
                want = eager(xe)
                eager_calls = list(calls)
                got = jitted(xj)
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(xj, xe)
            assert "ThunderModule" not in calls[len(eager_calls):]
            if grad:
                want.sum().backward()
                got.sum().backward()
                for p_e, p_j in zip(eager.parameters(), mod.parameters()):
                    torch.testing.assert_close(p_j.grad, p_e.grad)
    finally:
        handle.remove()
