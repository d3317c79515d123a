"""Session 37: a tensor stored into a dict or list that outlives the call, where the next thing to read it is
the prologue of the same compilation, and a store into an object given as an argument (leaked_proxies.py, Note
[a tensor stored into an object that outlives the call]; input_groups.py).

* ``self.state["m"] = ...`` (a module's dict attribute; also a global's, a closure's, a bound method's
  ``self``'s, a submodule's) raised Thunder's ``AssertionError: expected Tensor, got TensorProxy`` from inside
  the pass, which names no cause (plain ``thunder.jit`` raises the same). Now the refusal that names the store.
* ``cfg.hist.append(t)`` or ``cfg.state["m"] = t`` with ``cfg`` an object argument (a namespace, a dataclass)
  left the object holding TensorProxies after the call, silently, or raised the AssertionError: refused now,
  as a list or dict argument already was.
"""

import dataclasses
import types

import pytest
import torch
import torch.nn as nn

import fusion_alias

REFUSAL = "stores a tensor into"


class _DictState(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = {"m": torch.zeros(3)}

    def forward(self, x):
        self.state["m"] = self.state["m"] * 0.5 + x
        return self.state["m"] * 1


class _ListState(nn.Module):
    def __init__(self):
        super().__init__()
        self.slots = [torch.zeros(3)]

    def forward(self, x):
        self.slots[0] = self.slots[0] * 0.5 + x
        return self.slots[0] * 1


class _Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _DictState()

    def forward(self, x):
        return self.inner(x) + 1


_STATE = {"m": torch.zeros(3)}


def _global_store(x):
    _STATE["m"] = _STATE["m"] * 0.5 + x
    return _STATE["m"] * 1


def _closure_store():
    state = {"m": torch.zeros(3)}

    def step(x):
        state["m"] = state["m"] * 0.5 + x
        return state["m"] * 1

    return step


class _Stepper:
    def __init__(self):
        self.state = {"m": torch.zeros(3)}

    def step(self, x):
        self.state["m"] = self.state["m"] * 0.5 + x
        return self.state["m"] * 1


STORES = {
    "module dict": lambda: (_DictState(), "state['m']"),
    "module list": lambda: (_ListState(), "slots[0]"),
    "submodule dict": lambda: (_Outer(), "inner.state['m']"),
    "global dict": lambda: (_global_store, "_STATE['m']"),
    "closure dict": lambda: (_closure_store(), "state['m']"),
    "bound method self dict": lambda: (_Stepper().step, "self.state['m']"),
}


@pytest.mark.parametrize("name", list(STORES))
def test_a_tensor_stored_where_the_prologue_reads_it_is_refused_by_name(name):
    fn, where = STORES[name]()
    fn(torch.ones(3))  # eager runs it
    fn, where = STORES[name]()
    with pytest.raises(NotImplementedError, match=rf"{REFUSAL} .*{where.replace('[', '.').replace(']', '.')}"):
        fusion_alias.jit(fn)(torch.ones(3))


@dataclasses.dataclass
class _Cfg:
    hist: list
    state: dict
    scale: torch.Tensor


def _appends(x, cfg):
    cfg.hist.append(x * 2)
    return torch.stack(cfg.hist).sum(0)


def _replaces(x, cfg):
    cfg.state["m"] = cfg.state["m"] * 0.5 + x
    return cfg.state["m"] * 1


def _namespace():
    return types.SimpleNamespace(hist=[], state={"m": torch.zeros(3)}, scale=torch.full((3,), 2.0))


def _dataclass():
    return _Cfg([], {"m": torch.zeros(3)}, torch.full((3,), 2.0))


@pytest.mark.parametrize("make", [_namespace, _dataclass], ids=["namespace", "dataclass"])
@pytest.mark.parametrize("fn", [_appends, _replaces], ids=["append", "replace"])
def test_a_tensor_stored_into_an_object_argument_is_refused(fn, make):
    fn(torch.ones(3), make())  # eager runs it
    cfg = make()
    with pytest.raises(NotImplementedError, match=rf"{REFUSAL} its argument args\[1\]\."):
        fusion_alias.jit(fn)(torch.ones(3), cfg)


@pytest.mark.parametrize("make", [_namespace, _dataclass], ids=["namespace", "dataclass"])
def test_an_object_argument_read_and_written_in_place_still_runs(make):
    def f(x, cfg):
        cfg.scale.mul_(x)  # (an in-place write through the object: no store, the same tensor)
        return cfg.state["m"] + cfg.scale

    jitted = fusion_alias.jit(f)
    for k in range(3):
        want_cfg, got_cfg = make(), make()
        x = torch.full((3,), float(k + 1))
        want, got = f(x, want_cfg), jitted(x.clone(), got_cfg)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got_cfg.scale, want_cfg.scale)
