"""The symbols read substitution lays out: the walk's, in order, and those placed beside them
(``functionalize.py``, Note [a view of a value is computed from the view of its operands]).
"""

from __future__ import annotations

from itertools import compress, count

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, shape_reader


class _Placed:
    """The stage's symbols: the walk's, in order (``out``, only appended to), and the ones placed
    right before or right after one of them (or after one placed so).

    Note [symbols placed beside their producer, not inserted]
    ---------------------------------------------------------
    A pushed-down read (Note [a view of a value is computed from the view of its operands])
    places the views of an op's operands right before the op and the op of the views right after
    it, wherever the op is. Inserting into the list meant finding the op by a scan back from the
    end and moving every later symbol, per read: reading ``x_i[0]`` after every ``x_i.exp_()`` of
    thousands of buffers took 22 s at 10k symbols, 212 s at 30k (the bench's ``views`` trace). Here
    the op is found by name (an index built as the walk goes) and the placed symbols wait in lists
    beside it, laid out once at the end, in the order the insertions made: those placed before a
    symbol in the order placed, those placed after it the last placed first (each went right after
    it). Example: after ``t2 = exp(a)`` with ``e1`` then ``e2`` placed after it and ``s`` before
    it, the stage's order is ``s, t2, e2, e1``.

    Note [the walk indexes what it lays]
    ------------------------------------
    ``position`` holds, of the walk's symbols, the fusible ones (they may be pushed down:
    ``producer_of``) and the views (``existing_view`` reuses them; ``views``), each indexed by the
    walk's loop right after it appends it, while the symbol is in the cache (``functionalize.
    substitute_reads``), or by ``laid``; ``producer`` the placed symbols. Symbols of no other
    kind are not indexed: ``producer_of`` answers None for their names where it answered a
    ``copy_``, a non-fusible op or an ``update_aliases``, none of which ``_pushed_down`` pushes
    either. (Indexing every symbol later, on the first read, touched 100k cold symbols and cost a
    sixth of the stage on the bench's ``views`` trace.)
    """

    __slots__ = ("out", "producer", "position", "view_key", "views", "placed_before", "placed_after",
                 "shape_of", "written")

    def __init__(self, out: list, view_key: dict | None = None):
        self.out = out
        self.written: set | None = None  # names written through (copy_ destinations and the views they are made from)
        self.shape_of = shape_reader()  # (for ``_pushed_down``, which reads a few shapes per read it pushes)
        self.producer: dict[str, BoundSymbol] = {}  # name -> the placed symbol that makes it (one tensor output)
        self.position: dict[str, int] = {}  # name -> the index in ``out`` of the symbol that makes it (those indexed)
        self.view_key = view_key  # (``AliasInfo.view_key``; None: views are not indexed)
        self.views: dict[tuple, TensorProxy] = {}  # view key -> the first view of ``out`` that has it
        self.placed_before: dict[int, list] = {}  # id(symbol) -> symbols right before it, in the order placed
        self.placed_after: dict[int, list] = {}  # id(symbol) -> symbols right after it, in the order placed

    def producer_of(self, name: str):
        """The symbol that makes ``name`` (Note [the walk indexes what it lays]: one that may be pushed
        down), or None."""
        i = self.position.get(name)
        return self.producer.get(name) if i is None else self.out[i]

    def laid(self, start: int) -> None:
        """Index ``out[start:]``, symbols laid other than by the walk's own loop (Note [the walk
        indexes what it lays])."""
        out, position = self.out, self.position
        view_key, view_addrs, views = self.view_key, ops._VIEW_ADDRS, self.views
        for i in range(start, len(out)):
            b = out[i]
            o = b.output
            if isinstance(o, TensorProxy):
                name = o._name
                position[name] = i
                if view_key is not None and id(b.sym.id) in view_addrs:
                    key = view_key.get(name)
                    if key is not None:
                        views.setdefault(key, o)  # (the first view with the key: the earliest made)

    def existing_view(self, value: TensorProxy, chain, info: AliasInfo, anchor) -> TensorProxy | None:
        """A view among the walk's symbols that names what ``chain`` replayed on ``value`` would,
        made before ``anchor`` (a symbol of the walk; None: now), or None.

        Note [a replayed view that exists already]
        ------------------------------------------
        A view names memory; it does not hold a value. Two view proxies with one view key name
        the same elements of the same family, so reads of either at one point read the same
        numbers. In the bench's ``views`` trace (``v = x[0]``, then ``x.exp_()``, then ``v * 2``)
        the read of ``v`` is pushed down to ``exp(squeeze(slice(x)))`` right after ``exp(x)``: the
        view of ``x`` it needs is ``v`` itself, made before ``exp(x)``, so ``v`` is read there
        instead of ``slice``/``squeeze`` replayed on ``x`` (two symbols and two proxies per read,
        and ``v``'s own views dropped later as unread). Only views the walk laid in order
        (``out``) are reused, and only those made before the anchor: ``v`` made after ``exp(x)``
        would be read before it exists.
        """
        if self.view_key is None:
            return None
        keys = info.view_key.get(chain[-1].output._name)
        if keys is None or len(keys[1]) != len(chain):  # (an identity step in the chain: no key per step)
            return None
        of = info.view_key.get(value._name)
        if of is None:
            return None
        view = self.views.get((of[0], of[1] + keys[1]))
        if view is None or view._name in self._written_through(info):
            return None
        if anchor is None:
            limit = len(self.out)
        else:
            limit = self.position.get(anchor.output._name)
            if limit is None or self.out[limit] is not anchor:  # (an anchor placed beside one of ``out``)
                return None
        return view if self.position[view._name] < limit else None

    def _written_through(self, info: AliasInfo) -> set:
        """The names of the views the stage's symbols write through (a ``copy_`` destination, or a view made
        into one: the views of each destination's chain, as ``partition.destination_views`` finds them by a
        walk of the stage's symbols). Such a view runs outside regions: read in a region, it would be one more
        input, where the replayed view reads the operand the region reads anyway (the bench's ``rows_rw``:
        340 -> 364 bytes moved)."""
        if self.written is None:
            chains = info.chain
            self.written = {step.output._name for d in info.destinations for step in chains.get(d, ())}
        return self.written

    def _index(self, b: BoundSymbol) -> None:
        o = b.output
        if isinstance(o, TensorProxy):
            self.producer[o._name] = b

    def before(self, anchor, bsyms: list) -> None:
        """Place ``bsyms`` right before ``anchor`` (None: after every symbol so far)."""
        if anchor is None:
            start = len(self.out)
            self.out.extend(bsyms)
            self.laid(start)
            return
        self.placed_before.setdefault(id(anchor), []).extend(bsyms)
        for b in bsyms:
            self._index(b)

    def after(self, anchor: BoundSymbol, b: BoundSymbol) -> None:
        """Place ``b`` right after ``anchor``, before what was placed after it already."""
        self.placed_after.setdefault(id(anchor), []).append(b)
        self._index(b)

    def in_order(self) -> list:
        if not self.placed_before and not self.placed_after:
            return self.out
        laid: list = []
        append = laid.append
        before, after = self.placed_before, self.placed_after
        out = self.out
        anchors = before.keys() | after.keys()
        done = 0  # out[:done] is laid out
        # (most symbols have nothing placed beside them: the runs between those that do are copied whole)
        for i in list(compress(count(), map(anchors.__contains__, map(id, out)))):  # (a Python loop, in C)
            laid.extend(out[done:i])
            done = i + 1
            b = out[i]
            placed_before, placed_after = before.get(id(b), ()), after.get(id(b), ())
            if not placed_before and len(placed_after) == 1 and id(placed_after[0]) not in anchors:
                append(b)  # (one symbol placed after it, with nothing beside it: a pushed-down read)
                append(placed_after[0])
                continue
            if anchors.isdisjoint(map(id, placed_before)) and anchors.isdisjoint(map(id, placed_after)):
                laid.extend(placed_before)  # (nothing placed beside those placed: the walk below, unrolled)
                append(b)
                laid.extend(reversed(placed_after))
                continue
            stack = [(b, False)]  # (symbol, its own turn): a walk without recursion
            while stack:
                b, own_turn = stack.pop()
                if own_turn:
                    append(b)
                    continue
                # b's order: what was placed before it, b, then what was placed after it, last placed first
                for x in after.get(id(b), ()):
                    stack.append((x, False))
                stack.append((b, True))
                for x in reversed(before.get(id(b), ())):
                    stack.append((x, False))
        laid.extend(out[done:])
        return laid

