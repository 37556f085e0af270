"""Steps through PyYAML's composed nodes (keys and values with their marks), the one walk every layer uses to say at which
line a value is written (harness.gate.origin for the repository's files, harness.core.pin_file for versions.yaml)."""
from __future__ import annotations

import yaml


def step(node, key: str | int) -> tuple[yaml.Node | None, yaml.Node | None]:
    """(key node, value node) of one step into a mapping (a key) or a sequence (an index: the item
    is its own key node); (None, None) when the step is not there."""
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        return next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), (None, None))
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key], node.value[key]
    return None, None


def written_line(node, path: list[str | int]) -> int:
    """1-based line of the deepest step of `path` below `node` that is written (a mapping entry's key line)."""
    line = node.start_mark.line + 1
    for s in path:
        key, node = step(node, s)
        if node is None:
            break
        line = key.start_mark.line + 1
    return line


def written_twice(node) -> tuple[str, int, int] | None:
    """The first mapping key written twice in one mapping below `node` (key, its second line, its first line), as go-yaml
    refuses it and PyYAML would keep the last value silently; None when there is none."""
    todo = [node] if node is not None else []
    while todo:
        current = todo.pop(0)
        if isinstance(current, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        return key.value, key.start_mark.line + 1, seen[key.value]
                    seen[key.value] = key.start_mark.line + 1
                todo.append(value)
        elif isinstance(current, yaml.SequenceNode):
            todo += current.value
    return None
