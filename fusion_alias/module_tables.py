"""What a compiled program read of the modules it called, held and compared at each call: their hook
dicts, their submodules and their attribute dicts.

Note [hooks added or removed between calls]
-------------------------------------------
Thunder's interpreter runs ``Module.__call__`` (torch's ``_call_impl``): it reads the module's hook
dicts (``_forward_pre_hooks``, ``_forward_hooks``, ...) and torch's global ones, and traces the hooks it
finds into the program. Thunder 0.2.6's prologue checks none of those dicts, and fusion_alias did not
either (they are torch's bookkeeping, read at every module call: outside_reads.py, ``_is_table``). So a
hook registered after the first call was never run, and one removed kept running, silently::

    m = Net(); f = fusion_alias.jit(m)
    f(x)                                                    # compiled with no hook
    h = m.sub.register_forward_pre_hook(lambda mod, a: (a[0] * 3,))
    f(x)                                                    # eager: 3x the input to ``sub``; was: x
    h.remove(); f(x)                                        # (plain thunder.jit: ran the hook still)

(session 33 probe; the root module and a submodule alike, pre-hooks, forward hooks, hooks with kwargs,
hooks that write in place, torch's global module hooks.) Every hook torch registers gets a handle id of
its own (``RemovableHandle.next_id``), the dict's key, so a hook added, removed, or removed and replaced
by another changes the dict's keys. (A hook that removes itself while it runs, ``handle.remove()``, is not
traced: Thunder 0.2.6 raises "unhashable type: 'collections.OrderedDict'", plain ``thunder.jit`` too.)

Note [a submodule replaced between calls]
-----------------------------------------
Nor does the prologue check which module a parent holds: ``m.act = nn.Tanh()`` in place of a ReLU,
``m.head = nn.Linear(3, 3, bias=False)`` in place of one with a bias, ``m.lin = nn.Sequential(...)``,
``seq[1] = nn.Tanh()``, ``seq.append(...)``, or a module in a global dict swapped for another: the next
call ran the first module's program (session 33 probe; plain ``thunder.jit`` too. A parameter rebound on
a module the program holds is followed already: module_state.py, Note [state rebound between calls]). A module
reached as ``parent._modules[name]`` (an attribute or an entry of a ``Sequential``, ``ModuleList``,
``ModuleDict``) is guarded by its parent's ``_modules`` dict, compared entry by entry, each module by
identity; one reached any other way (a global, a closure, an argument's attribute) by its path, as an
identity answer is. The function or module called is the program's own.

And an attribute set on a module between calls that shadows what the first call read from its class
(``m.forward = other``, ``m.act = torch.tanh`` over a method ``act``) was not seen either: each module
called is guarded by how many attributes its ``__dict__`` holds. Not seen (documented in docs/limits.md): an
entry replaced under the same key outside torch's API, and a dict of the module other than its hook dicts replaced.

Note [a hook dict replaced on the module]
-----------------------------------------
``m._forward_hooks = OrderedDict()`` is an idiom for removing every hook of a module at once, and
``m._forward_pre_hooks = OrderedDict({k: hook})`` sets one: the module's attribute names and the held dicts are
the same as before, so the check above did not see it, and the program kept running the hooks of the first call
(session 35 probe; plain ``thunder.jit`` too)::

    m.sub._forward_pre_hooks = OrderedDict({999: lambda mod, a: (a[0] * 0,)})   # eager: the hook runs; was: not

So each module called is held with the hook dict each of its four hook attributes named, and torch's module
globals with their four global hook dicts, compared by identity at each call (a C-level pass: four entries a
module).

Note [torch's global hooks and the ThunderModule]
-------------------------------------------------
``fusion_alias.jit(m)`` runs the ThunderModule Thunder made of ``m``, itself an ``nn.Module``: called as a module,
it ran torch's global hooks (``register_module_forward_hook``) once more, on its own output, after the program
had run them for ``m`` and its submodules as eager does (session 35 probe; plain ``thunder.jit`` too)::

    register_module_forward_hook(lambda mod, args, out: out * 10)
    f = fusion_alias.jit(m); f(x)        # eager: m's and m.sub's hooks, x100;  was: x1000

So its ``forward`` is called instead (the ThunderModule holds no hooks of its own: the user never sees it).

Note [forward replaced on the class]
------------------------------------
``Net.forward = f`` between calls (session 34): each module called is held with its class and the function
the class's ``forward`` was, compared by identity at each call (an object's ``__class__`` swapped too), for
torch's modules as for the program's. The program's other methods are guarded by the function each binds
(outside_reads.py, Note [the methods and the function called]); a called module's ``forward`` is not
recorded there a second time (8 paths of 4 steps each for an 8-block MLP: ~25 us a call).

Mechanism: while ``fusion_alias.jit`` compiles, each module whose hook dict the interpreter reads is
noted once (``note``): its hook dicts, its ``_modules`` and its ``__dict__`` are held in one
``ModuleTables`` of the compilation (with torch's global hook dicts), which is recorded with the identity
answers (tensor_identity.py, Note [identity answers are guarded]) as each dict was when read (keys,
entries, length). A call runs the program only when all are the same; another compiles its own program.
The check is a C-level pass over the held dicts (Note [what the check compares]); a module reached
outside ``_modules`` costs a path followed (about 1 us).
"""

from __future__ import annotations

from operator import is_
from types import FunctionType

import torch
from thunder.core.interpreter import PseudoInst
from torch.utils.hooks import RemovableHandle

from fusion_alias.default_contents import default_contents
from fusion_alias.object_shapes import Live, Shape

# the hook dicts ``Module._call_impl`` reads of a module, and of torch.nn.modules.module's globals; the
# first four are held (a hook registered with ``with_kwargs`` or ``always_call`` is in ``_forward_hooks`` or
# ``_forward_pre_hooks`` too, under the same key, and its handle removes it from both)
_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")
MODULE_TABLES = frozenset(_HOOK_TABLES) | {"_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                                           "_forward_pre_hooks_with_kwargs"}
_GLOBAL_TABLES = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_hooks",
                  "_global_backward_pre_hooks")


class ModuleTables(Live):
    """The dicts a compilation read of the modules it called, in the order it met them (held: an id is never
    reused while a program keys by it): every dict by its length; the hook dicts by their keys too, and
    the ``_modules`` dicts that hold submodules by the modules they hold (Note [what the check compares])."""

    __slots__ = ("modules", "sized", "hooks", "parents", "read", "next_id", "recorded", "forwards", "owners",
                 "owned_names", "owned", "forward_defaults")

    def __init__(self, recorded):
        self.modules: set = set()  # ids of the modules noted
        self.sized: list = []  # every dict held: hook dicts, ``_modules``, ``__dict__``
        self.hooks: list = []
        self.parents: list = []  # the ``_modules`` dicts that held a submodule when read
        self.read = ([], [], [])  # (lengths, hook keys, submodules) when the compilation read each
        self.next_id = RemovableHandle.next_id  # (at the first read: a hook registered after it, even during
        # the compilation, sends every call to the comparison of keys)
        self.recorded = recorded  # an ``object_shapes.Shape`` of ``read``, compared with ``now()``
        self.forward_defaults: list = []  # (a ``forward`` whose defaults hold containers, what they held)
        self.forwards: list = []  # (module, its class, the class's ``forward``): Note [forward replaced on the class]
        # each module's ``__dict__``, a hook dict's name, the dict it held: Note [a hook dict replaced on the module]
        self.owners: list = []
        self.owned_names: list = []
        self.owned: list = []

    def add(self, module) -> None:
        self.modules.add(id(module))
        cls = type(module)
        self.forwards.append((module, cls, cls.forward))
        contents = default_contents(cls.forward) if type(cls.forward) is FunctionType else ()
        if contents:  # (default_contents.py, Note [a default container of a function the program calls])
            self.forward_defaults.append((cls.forward, contents))
        self.hold_hooks(module.__dict__, _HOOK_TABLES)
        for table in (module._modules, module.__dict__):
            self.sized.append(table)
            self.read[0].append(len(table))
        if module._modules:
            self.parents.append(module._modules)
            self.read[2].append(tuple(module._modules.values()))
        self.recorded.key = tuple(map(tuple, self.read))

    def hold_hooks(self, owner: dict, names) -> None:
        """Hold the hook dicts ``owner`` (a module's ``__dict__``, torch's module globals) holds under ``names``, and
        which dict each name held (Note [a hook dict replaced on the module])."""
        for name in names:
            table = owner.get(name)
            self.owners.append(owner)
            self.owned_names.append(name)
            self.owned.append(table)
            if isinstance(table, dict):
                self.sized.append(table)
                self.hooks.append(table)
                self.read[0].append(len(table))
                self.read[1].append(tuple(table))

    def now(self) -> tuple:
        """The dicts' lengths, hook keys and submodules now, as far as they can differ from ``read``
        (``object_shapes.shape_of`` of this; Note [what the check compares])."""
        lengths = tuple(map(len, self.sized))
        read = self.recorded.key
        if lengths != read[0]:
            return (lengths,)
        for module, cls, forward in self.forwards:
            if type(module) is not cls or cls.forward is not forward:
                return ("forward", id(module))
        for forward, contents in self.forward_defaults:
            if default_contents(forward) != contents:
                return ("forward defaults", id(forward))
        if not all(map(is_, map(dict.get, self.owners, self.owned_names), self.owned)):
            return ("hook dict replaced",)
        hooks = read[1] if RemovableHandle.next_id == self.next_id else tuple(map(tuple, self.hooks))
        return lengths, hooks, tuple(map(tuple, map(dict.values, self.parents)))


# Note [what the check compares]
# ------------------------------
# A call compares, with what the compilation read: the length of every dict held (a hook added or
# removed, a submodule added, an attribute set on a module or deleted); the keys of the hook dicts only
# where a hook was registered anywhere since (torch numbers every hook handle from one counter,
# ``RemovableHandle.next_id``: unchanged, no dict holds a key it did not hold, and a length that is the
# same is the same keys); the submodules of each module that held some, by identity. 100 modules called
# (604 dicts, 4 of them torch's global hook dicts) cost about 10 us a call (15 us on a loaded machine).


class _Held:
    """A provenance record that ``tensor_identity._follow`` reads as the constant it holds."""

    __slots__ = ("value",)
    inst = PseudoInst.CONSTANT
    inputs = ()

    def __init__(self, value):
        self.value = value


def _in_parents_modules(record) -> bool:
    """Whether ``record`` reads ``parent._modules[name]`` (Note [a submodule replaced between calls])."""
    if record.inst is not PseudoInst.BINARY_SUBSCR or len(record.inputs) != 2:
        return False
    of = record.inputs[0]
    return (of.inst is PseudoInst.LOAD_ATTR and len(of.inputs) == 2 and of.inputs[1].inst is PseudoInst.CONSTANT
            and of.inputs[1].value == "_modules")


def note(module, record, ctx) -> bool:
    """Hold what the compilation of ``ctx`` reads of ``module`` the first time it meets the module (Note [hooks
    added or removed between calls], Note [a submodule replaced between calls]); whether the module, reached
    by ``record``, must be guarded by that path too."""
    tables = ctx.module_tables
    if tables is None:
        tables = ctx.module_tables = ModuleTables(Shape(()))
        tables.hold_hooks(vars(torch.nn.modules.module), _GLOBAL_TABLES)
        ctx.identity_records.append((_Held(tables), tables.recorded))
        _follow_replaced_modules(ctx.fn)
    if id(module) not in tables.modules:
        tables.add(module)
    return record.inst is not PseudoInst.INPUT_FN and not _in_parents_modules(record)


def _follow_replaced_modules(model) -> None:
    """Point the ThunderModule's table of submodules at the modules ``model`` holds now (Note [a submodule
    replaced between calls]): Thunder 0.2.6 fills it once, when the ThunderModule is made, and the
    prologue it writes reads each submodule from it (``module.get_submodule('act')``), so a program traced
    after ``m.act = nn.GELU()`` checked the GELU's ``approximate`` on the old ReLU (AttributeError; plain
    ``thunder.jit`` ran the old module's program). Called while compiling, before the prologue runs."""
    if not isinstance(model, torch.nn.Module):
        return
    from thunder.core.module import ThunderModule, get_thunder_module

    try:
        thunder_module = get_thunder_module(model)  # (the model itself where none wraps it)
    except Exception:
        return
    cache = getattr(thunder_module, "_module_cache", None) if isinstance(thunder_module, ThunderModule) else None
    if not isinstance(cache, dict):
        return
    now = dict(model.named_modules())
    if cache != now:  # (modules compare by identity)
        cache.clear()
        cache.update(now)
