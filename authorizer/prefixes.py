"""Stored prefixes, found again from a concrete name in O(log n), whatever their lengths.

``PrefixList`` keeps entries (``Entry`` objects: a ``name`` and a ``parent``) sorted by name, each linked to
the longest OTHER stored name that is a prefix of its own (its parent). Which stored names start ``name``?

* each of them sorts at or before ``name``, and the greatest stored name ``e <= name`` starts with each of
  them (anything that sorts between a prefix of ``name`` and ``name`` starts with that prefix);
* so they are all on ``e``'s parent chain, and once one entry on the chain prefixes ``name`` its ancestors do.

One ``bisect`` (C) and a walk of a chain as long as the names' nesting depth answers the question, where
probing a hash table per stored prefix length costs one slice and one lookup per length.

A parent always sorts before its children, so the entries a change can affect (the names that start with
the changed name) follow it in order, parents first: after a change the list calls ``refresh()`` on the
changed entry and then on each of them, which lets an entry keep values it derives from its ancestors.

Names sit in chunks of at most ``2 * chunk``, so an insert moves a chunk, not the whole list: loading n
prefixes costs O(n log n) plus, per change, a pass over the stored names that start with the changed one.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Generic, TypeVar

CHUNK = 4096


class Entry:
    """What a PrefixList stores: a name, the entry of its longest stored proper prefix, and a refresh hook."""

    __slots__ = ("name", "parent")

    def __init__(self, name: str) -> None:
        self.name = name
        self.parent: Entry | None = None

    def refresh(self) -> None:
        """Called when this entry or one of its ancestors was added, removed or refreshed: parents first."""


E = TypeVar("E", bound=Entry)


class PrefixList(Generic[E]):
    """Entries sorted by name, in chunks; ``firsts``, ``names`` and ``entries`` are read directly by hot paths."""

    __slots__ = ("chunk", "entries", "firsts", "names")

    def __init__(self, chunk: int = CHUNK) -> None:
        self.chunk = chunk  # a chunk splits in two at 2 * chunk names
        self.firsts: list[str] = []  # each chunk's first name
        self.names: list[list[str]] = []  # chunks of names, ascending; all names of chunk c sort before chunk c + 1's
        self.entries: list[list[E]] = []  # the entries, aligned with names

    def __len__(self) -> int:
        return sum(len(names) for names in self.names)

    def __bool__(self) -> bool:
        return bool(self.firsts)

    def __iter__(self) -> Iterator[E]:
        for entries in self.entries:
            yield from entries

    def longest(self, name: str) -> E | None:
        """The longest stored name that is a prefix of ``name`` (or equal to it); the others are its ``parent`` chain."""
        firsts = self.firsts
        c = bisect_right(firsts, name) - 1 if len(firsts) > 1 else 0
        if c < 0 or not firsts:
            return None
        names = self.names[c]
        i = bisect_right(names, name) - 1
        if i < 0:
            return None
        entry = self.entries[c][i]
        while entry is not None and not name.startswith(entry.name):
            entry = entry.parent
        return entry

    def add(self, entry: E) -> None:
        """Store an entry whose name is not stored yet; sets its parent and re-links the names it prefixes."""
        name = entry.name
        firsts = self.firsts
        if not firsts:
            entry.parent = None
            firsts.append(name)
            self.names.append([name])
            self.entries.append([entry])
            entry.refresh()
            return
        c = max(bisect_right(firsts, name) - 1, 0)
        names, entries = self.names[c], self.entries[c]
        i = bisect_left(names, name)
        if i < len(names) and names[i] == name:
            raise ValueError(f"prefix {name!r} is already stored")
        # Its parent is on the chain of the greatest name below it (the same argument as in longest()).
        parent = entries[i - 1] if i else None
        while parent is not None and not name.startswith(parent.name):
            parent = parent.parent
        entry.parent = parent
        names.insert(i, name)
        entries.insert(i, entry)
        if i == 0:
            firsts[c] = name
        entry.refresh()
        # Names it prefixes follow it; those whose longest stored prefix was its parent now have it instead.
        self._descendants(c, i + 1, name, parent, entry)
        half = self.chunk
        if len(names) > 2 * half:
            self.names.insert(c + 1, names[half:])
            self.entries.insert(c + 1, entries[half:])
            firsts.insert(c + 1, names[half])
            del names[half:], entries[half:]

    def remove(self, entry: E) -> None:
        """Forget a stored entry; the names it prefixed get its parent back."""
        c, i = self._position(entry)
        names = self.names[c]
        del names[i], self.entries[c][i]
        if not names:
            del self.names[c], self.entries[c], self.firsts[c]
            i = 0  # the next chunk moved to c
        elif i == 0:
            self.firsts[c] = names[0]
        self._descendants(c, i, entry.name, entry, entry.parent)
        entry.parent = None

    def refresh(self, entry: E) -> None:
        """The entry's own values changed: refresh it and every entry below it."""
        c, i = self._position(entry)
        entry.refresh()
        self._descendants(c, i + 1, entry.name, None, None)

    def _position(self, entry: E) -> tuple[int, int]:
        name = entry.name
        c = bisect_right(self.firsts, name) - 1
        if c >= 0:
            i = bisect_left(self.names[c], name)
            if i < len(self.names[c]) and self.entries[c][i] is entry:
                return c, i
        raise KeyError(name)

    def _descendants(self, c: int, i: int, prefix: str, old: E | None, new: E | None) -> None:
        """From (chunk c, index i) on, while names start with ``prefix``: parent ``old`` becomes ``new``; refresh each."""
        all_names, all_entries = self.names, self.entries
        relink = old is not new
        while c < len(all_names):
            names, entries = all_names[c], all_entries[c]
            for j in range(i, len(names)):
                if not names[j].startswith(prefix):
                    return
                entry = entries[j]
                if relink and entry.parent is old:
                    entry.parent = new
                entry.refresh()
            c, i = c + 1, 0
