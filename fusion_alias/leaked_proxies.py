"""Where a traced program left a ``TensorProxy`` in a Python object that outlives the call.

Note [a tensor stored into an object that outlives the call]
-------------------------------------------------------------
Thunder's interpreter runs a store into a Python container or attribute the program reaches (an
argument's list, a module's list attribute, a closure's or a global's list) on the real object while
tracing, with the proxy it traced, and a cached call never runs the store again. So after::

    class DynCache(nn.Module):          # a dynamic KV cache, as Hugging Face's DynamicCache grows
        def forward(self, k):
            self.past.append(k * 2)
            return torch.cat(self.past, 0).sum(0)

three calls leave ``self.past == [TensorProxy]`` and return ``[2, 4, 6]`` where eager keeps three
tensors and returns ``[2, 6, 12]`` (hostile probe 13; hostile probe 12 found it for a list argument:
functional ``torch.optim.sgd`` lost its momentum). ``proxy_left_in`` looks, after a call that compiled,
in the arguments, the attributes of the module called (and its submodules), and the closure cells and
referenced globals of the function (or of the module's ``forward``), through lists, tuples and dicts a
few levels deep; ``api`` refuses the call when it finds one.
"""

from __future__ import annotations

import types

import torch
from thunder.core.proxies import TensorProxy

_DEPTH = 4


def _walk(x, where: str, depth: int) -> str | None:
    if isinstance(x, TensorProxy):
        return where
    if depth > _DEPTH:
        return None
    if isinstance(x, dict):
        items = ((f"[{k!r}]", v) for k, v in x.items())
    elif isinstance(x, (list, tuple)):
        items = ((f"[{i}]", v) for i, v in enumerate(x))
    elif _plain_object(x):  # (an argument's attributes: ``cfg.state["m"] = t`` with ``cfg`` a namespace)
        items = ((f".{k}", v) for k, v in vars(x).items())
    else:
        return None
    for step, v in items:
        if (found := _walk(v, where + step, depth + 1)) is not None:
            return found
    return None


def _plain_object(x) -> bool:
    """Whether ``x`` is an object of the program's whose attributes a store could reach: one with a
    ``__dict__`` that is not a tensor, a module (walked by ``_module_attributes``), a class, a function or
    a Python module."""
    return (hasattr(x, "__dict__") and not isinstance(x, (torch.Tensor, torch.nn.Module, type, types.ModuleType))
            and not callable(x))


def _module_attributes(module):
    for path, sub in module.named_modules():
        for name, value in vars(sub).items():
            if not name.startswith("_"):
                yield f"the module attribute {(path + '.' if path else '') + name}", value


def _outliving(fn):
    """(description, object) for what ``fn`` reaches besides its arguments: module attributes (not
    parameters, buffers or submodules: Thunder handles those), the attributes of a bound method's
    ``self``, closure cells, referenced globals."""
    code_owner = fn
    if isinstance(fn, types.MethodType):  # ``fusion_alias.jit(opt.step)``: what its ``self`` holds outlives the call
        owner, code_owner = fn.__self__, fn.__func__
        if isinstance(owner, torch.nn.Module):
            yield from _module_attributes(owner)
        elif hasattr(owner, "__dict__"):
            for name, value in vars(owner).items():
                yield f"the attribute self.{name}", value
    if isinstance(fn, torch.nn.Module):
        yield from _module_attributes(fn)
        code_owner = type(fn).forward
    code = getattr(code_owner, "__code__", None)
    if code is None:
        return
    for name, cell in zip(code.co_freevars, getattr(code_owner, "__closure__", None) or ()):
        try:
            yield f"the closure variable {name}", cell.cell_contents
        except ValueError:  # an empty cell
            continue
    scope = getattr(code_owner, "__globals__", {})
    for name in code.co_names:
        if name in scope:
            yield f"the global {name}", scope[name]


def proxy_in_arguments(args: tuple, kwargs: dict) -> str | None:
    """Where a list, dict or object among the arguments holds a ``TensorProxy`` (``args[1][0]``,
    ``args[1].state['m']``), or None."""
    for i, a in enumerate(args):
        if (isinstance(a, (list, tuple, dict)) or _plain_object(a)) and (found := _walk(a, f"args[{i}]", 0)) is not None:
            return found
    for k, v in kwargs.items():
        if (isinstance(v, (list, tuple, dict)) or _plain_object(v)) and (found := _walk(v, k, 0)) is not None:
            return found
    return None


def proxy_left_in(fn, args: tuple, kwargs: dict) -> tuple[str, bool] | None:
    """(where, whether it is an argument) for the first ``TensorProxy`` left after a call (Note [a tensor
    stored into an object that outlives the call]), or None. ``fn`` None: the arguments only."""
    if (found := proxy_in_arguments(args, kwargs)) is not None:
        return found, True
    for what, value in _outliving(fn):
        if isinstance(value, (TensorProxy, list, tuple, dict)) and (found := _walk(value, "", 0)) is not None:
            return what + found, False
    return None


def refuse_leak(where: str, is_argument: bool) -> None:
    """Raise for a tensor stored at ``where`` (Note [a tensor stored into an object that outlives the call])."""
    raise NotImplementedError(
        "fusion_alias: the function stores a tensor into "
        + (f"its argument {where} (a list, dict or object it was given)" if is_argument else f"{where}, which outlives the call")
        + ": not supported. Thunder 0.2.6 leaves a TensorProxy there instead of the tensor, and "
        "later calls do not run the store at all, so the caller would silently keep the stale entry "
        "(torch.optim's functional sgd with momentum_buffer_list=[None] loses its momentum). Return "
        "the tensor instead, or create it before the call")
