"""`load_yaml_bounded`: PyYAML safe-load typing, with the size, nesting and alias expansion of a document bounded.

The document is measured on PyYAML's event stream before anything is built: each alias counts as a full copy of
the node it names, so a few hundred bytes of nested aliases ("billion laughs") are refused instead of becoming a
structure whose printed or serialised form runs to gigabytes. An alias to a node that contains it is refused too.
Only a document that passes is loaded, by PyYAML's safe loader (libyaml-backed when present), so its values are
typed as `yaml.safe_load` types them (YAML 1.1).
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["DEFAULT_MAX_DEPTH", "EXPANSION_FACTOR", "YamlRefused", "load_yaml_bounded"]

DEFAULT_MAX_DEPTH = 64  # collections inside collections, aliases expanded
EXPANSION_FACTOR = 10  # by default, aliases may grow a document to ten times its size in bytes

# libyaml's parser with PyYAML's own safe constructor and resolver: the same typing as yaml.SafeLoader, faster.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENING = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSING = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class YamlRefused(yaml.YAMLError):
    """Raised when a YAML document is malformed or exceeds a bound; `what` names the file, `reason` says why."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason

    def __repr__(self) -> str:
        return f"YamlRefused(what={self.what!r}, reason={self.reason!r})"


class _Open:
    """A collection whose end event has not arrived yet: its anchor, and its expanded size and height so far."""

    __slots__ = ("anchor", "height", "size")

    def __init__(self, anchor: str | None) -> None:
        self.anchor = anchor
        self.size = 1
        self.height = 1

    def add(self, size: int, height: int) -> None:
        self.size += size
        self.height = max(self.height, height + 1)


def _measure(text: str, what: str, *, max_depth: int, max_expanded: int) -> None:
    """Walk the event stream once; raise YamlRefused when the document, aliases expanded, breaks a bound."""
    named: dict[str, tuple[int, int]] = {}  # anchor -> (expanded size, height) of the node it names
    stack: list[_Open] = []
    expanded = 0
    loader = _LOADER(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, _OPENING):
                if len(stack) >= max_depth:
                    raise YamlRefused(what, f"collections are nested more than {max_depth} levels deep")
                stack.append(_Open(event.anchor))
                expanded += 1
            elif isinstance(event, yaml.ScalarEvent):
                size = 1 + len(event.value)
                expanded += size
                if event.anchor is not None:
                    named[event.anchor] = (size, 0)
                if stack:
                    stack[-1].add(size, 0)
            elif isinstance(event, yaml.AliasEvent):
                if any(node.anchor == event.anchor for node in stack):
                    raise YamlRefused(what, f"the alias *{event.anchor} refers to a node that contains it")
                size, height = named.get(event.anchor or "", (1, 0))  # an unknown alias is the loader's error to report
                if len(stack) + height > max_depth:
                    raise YamlRefused(what, f"the alias *{event.anchor} expands to collections nested more than "
                                            f"{max_depth} levels deep")
                expanded += size
                if stack:
                    stack[-1].add(size, height)
            elif isinstance(event, _CLOSING):
                closed = stack.pop()
                if closed.anchor is not None:
                    named[closed.anchor] = (closed.size, closed.height)
                if stack:
                    stack[-1].add(closed.size, closed.height)
            if expanded > max_expanded:
                raise YamlRefused(what, f"aliases expand the document beyond {max_expanded} nodes and characters")
    except YamlRefused:
        raise
    except yaml.YAMLError as exc:
        raise YamlRefused(what, f"not valid YAML: {' '.join(str(exc).split())}") from exc
    finally:
        loader.dispose()


def load_yaml_bounded(
    text: str, *, max_bytes: int, what: str, max_depth: int = DEFAULT_MAX_DEPTH, max_expanded: int | None = None
) -> Any:
    """Return the value of one YAML document (None when empty), typed as `yaml.safe_load` types it; raise
    YamlRefused, naming `what`, when the text is malformed, longer than `max_bytes` (UTF-8), nested deeper than
    `max_depth`, or when aliases expand it beyond `max_expanded` nodes and characters (default
    EXPANSION_FACTOR × `max_bytes`)."""
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise YamlRefused(what, f"the file is larger than {max_bytes} bytes")
    limit = max_expanded if max_expanded is not None else EXPANSION_FACTOR * max(max_bytes, 1)
    _measure(text, what, max_depth=max_depth, max_expanded=limit)
    try:
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise YamlRefused(what, f"not valid YAML: {' '.join(str(exc).split())}") from exc
