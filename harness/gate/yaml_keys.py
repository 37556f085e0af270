"""Mapping keys that YAML reads as no string (`1: x`, `true: x`, `1.5: x`, `~: x`), as the tools that read the repository
treat them.

- kubectl, Flux's apply and post-build substitution read YAML with sigs.k8s.io/yaml, whose `YAMLToJSON` turns an int,
  float or bool key into a string (`"1"`, `"1.5"`, `"true"`) and refuses a null one ("unsupported map key of type
  <nil>"): the loader here does the same (`KeyLoader`), so a sample's label `1: x` is the label "1".
- kustomize keeps the key as a YAML scalar, and serialising the object (`Resource.MarshalJSON`, the build's output)
  fails on a nested mapping that has such a key ("json: unsupported type: map[interface {}]interface {}"): the build
  fails, and `nonstring_keys` finds where the key is written. A label or annotation key a kustomization's own
  commonLabels / labels / commonAnnotations sets is read by its loader (sigs.k8s.io/yaml: `loaded_key`) and written into
  the objects plain, so it fails when that string, plain, is no string to go-yaml v3 (`plain_nonstring`), quoted or not.
"""
from __future__ import annotations

import math
import struct

import yaml

# libyaml's loader when PyYAML was built with it: ten times faster than the pure-Python one.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KEY_HINT = "quote the key (`\"1\": x`): a quoted key is a string for every tool"
_NULL, _BOOL, _INT, _FLOAT = (f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float"))


def _go_float(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32), as sigs.k8s.io/yaml writes a float key (`.inf`, `.nan` as go-yaml)."""
    try:
        f32 = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # beyond float32: Go's conversion gives ±Inf
        f32 = math.copysign(math.inf, value)
    if math.isinf(f32) or math.isnan(f32):
        return ".nan" if math.isnan(f32) else ".inf" if f32 > 0 else "-.inf"
    for digits in range(1, 10):  # the shortest digits that read back as the same float32
        text = f"{f32:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mantissa, exp = text.split("e")
    sign, figures = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
    figures = figures.replace(".", "").rstrip("0") or "0"
    exp = int(exp)
    if exp < -4 or exp >= 6:  # %e, with the shortest precision ('g' decides at 6 digits then)
        return f"{sign}{figures[0]}{'.' + figures[1:] if len(figures) > 1 else ''}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    whole = figures[:exp + 1].ljust(exp + 1, "0") if exp >= 0 else "0"
    fraction = figures[exp + 1:] if exp >= 0 else "0" * (-exp - 1) + figures
    return f"{sign}{whole}{'.' + fraction if fraction else ''}"


def key_string(node: yaml.ScalarNode, key) -> str:
    """The string sigs.k8s.io/yaml makes of a mapping key PyYAML constructed as `key` from `node` (go-yaml v2 reads a
    key as YAML 1.1 does, as PyYAML does); ConstructorError for a key it refuses (null, beyond int64)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        if -2**63 <= key < 2**63:
            return str(key)
        if key >= 2**64 and node.value.lstrip("+").replace("_", "").isdigit():  # go-yaml reads it as a float then
            return _go_float(float(key))
    elif isinstance(key, float):
        return _go_float(key)
    elif key is not None:
        return node.value  # a timestamp or !!binary: go-yaml keeps it as the string written
    raise yaml.constructor.ConstructorError(
        None, None, f"mapping key {node.value or '(empty)'!r} is {'null' if key is None else 'an integer beyond int64'}: "
        f"kubectl and Flux (sigs.k8s.io/yaml) refuse it (unsupported map key of type {'<nil>' if key is None else 'uint64'})",
        node.start_mark)


class KeyLoader(SafeLoader):
    """SafeLoader whose mapping keys are strings, as sigs.k8s.io/yaml makes them."""

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)  # its error
        self.flatten_mapping(node)  # merge keys (<<), as SafeConstructor does
        mapping = {}
        for key_node, value_node in node.value:  # each key converted on its own: 1 and true are two keys, as in go-yaml
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                if not isinstance(key_node, yaml.ScalarNode):
                    raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                            "found a mapping key that is a list or a mapping", key_node.start_mark)
                key = key_string(key_node, key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def plain_nonstring(value: str) -> bool:
    """Whether go-yaml v3 (kustomize) reads `value`, written as a plain scalar, as no string: an int, float, null or
    true/false (YAML 1.2 reads yes/no/on/off as strings, and has no sexagesimal 1:20)."""
    tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False))
    return (tag in (_INT, _FLOAT) and ":" not in value) or tag == _NULL or (tag == _BOOL and value.lower() in ("true", "false"))


def loaded_key(node: yaml.ScalarNode) -> str | None:
    """The string a kustomization's loader (sigs.k8s.io/yaml) makes of the mapping key `node` (`yes` is "true", `0x10`
    "16"); None for one it refuses (null)."""
    if node.style:
        return node.value
    try:
        return key_string(node, yaml.load(node.value, Loader=SafeLoader) if node.value else None)
    except yaml.YAMLError:
        return None


def nonstring_keys(text: str) -> list[tuple[int, str]]:
    """(line, key) of each mapping key in a nested mapping of `text`'s documents that go-yaml v3 (kustomize) reads as no
    string: an unquoted int, float, null or true/false (YAML 1.2 reads yes/no/on/off as strings). The documents' own
    top-level keys are not among them: kustomize reads those into a string map."""
    out: list[tuple[int, str]] = []
    try:
        roots = list(yaml.compose_all(text, Loader=SafeLoader))
    except yaml.YAMLError:
        return out
    todo = [(r, 0) for r in roots if r is not None]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if depth and isinstance(key, yaml.ScalarNode) and not key.style and plain_nonstring(key.value):
                    out.append((key.start_mark.line + 1, key.value))
                todo.append((value, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            todo += [(n, depth + 1) for n in node.value]
    return sorted(out)
