"""name -> tensor proxy over a trace's outputs and inputs, built only if asked."""

from __future__ import annotations

from collections.abc import Mapping

from thunder.core.proxies import TensorProxy

from fusion_alias.aliasing import tensor_outs


def tensor_proxies_by_name(bsyms, inputs=()) -> "ProxiesByName":
    """name -> the tensor proxy of that name, over the outputs of ``bsyms`` and the ``inputs``
    (a read-only mapping, filled at its first question: most passes never ask one)."""
    return ProxiesByName(bsyms, inputs)


class ProxiesByName(Mapping):
    """``tensor_proxies_by_name``'s answer: the dict is built when first read.

    The checks that ask it (the roots of memory the program made, in the refusals and
    ``noop_copies``) run on a few copies of a few programs; building it for every pass
    cost a walk over all outputs (a tenth of a second at 100k bsyms).
    """

    def __init__(self, bsyms, inputs=()):
        self._source: tuple | None = (bsyms, tuple(inputs))
        self._map: dict[str, TensorProxy] = {}

    def _built(self) -> dict:
        if self._source is not None:
            bsyms, inputs = self._source
            self._map = {o.name: o for b in bsyms for o in tensor_outs(b)}
            self._map.update((p.name, p) for p in inputs)
            self._source = None
        return self._map

    def __getitem__(self, name):
        return self._built()[name]

    def __iter__(self):
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def __contains__(self, name) -> bool:
        return name in self._built()

    def get(self, name, default=None):
        return self._built().get(name, default)
