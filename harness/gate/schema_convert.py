"""OpenAPI v3 and CRD structural schemas turned into strict, standalone draft-4 JSON schemas.

"Strict" is what kubeconform's openapi2jsonschema does: an object schema that lists `properties`
and says nothing about `additionalProperties` gets `additionalProperties: false`, unless it is
`x-kubernetes-preserve-unknown-fields`. Besides:

* `x-kubernetes-int-or-string` accepts an integer or a string;
* `nullable: true` accepts null; so does any optional (not `required`) property, because the API
  server accepts null there too (it decodes null to the zero value for built-ins and prunes
  non-nullable nulls from custom resources), e.g. `creationTimestamp: null`.

References are inlined, because kubeconform's `validationErrors` show only the first level of the
error tree and every $ref/allOf adds one: with them inlined a typo is reported at its own path.
Only recursive types (JSONSchemaProps, in the CustomResourceDefinition schema) stay as
`#/definitions/...` pointers inside the same file. Descriptions are dropped (kubeconform never
shows them; they were two thirds of the bytes).
"""
from __future__ import annotations

from harness.core import HarnessError

DRAFT4 = "http://json-schema.org/draft-04/schema#"
K8S_REF_PREFIX = "#/components/schemas/"
REF_PREFIX = "#/definitions/"
NULLABLE_SUFFIX = "@nullable"  # definitions variant that also accepts null


class SchemaError(HarnessError, RuntimeError):
    pass


_SCHEMA_MAPS = ("properties", "patternProperties", "definitions")  # name -> subschema
_SCHEMA_ONE = ("additionalProperties", "additionalItems", "items", "not")  # a subschema (items: or list)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "items")
_ANNOTATIONS = {"description", "default", "example", "title"}


def _map_subschemas(node: dict, fn) -> dict:
    """A copy of `node` with fn applied to every direct subschema (keyword-aware, so property
    *names* like `properties`, `$ref` or `additionalProperties`, which JSONSchemaProps has, are
    never mistaken for keywords)."""
    out = dict(node)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: fn(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_ONE:
        if isinstance(out.get(key), dict):
            out[key] = fn(out[key])
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [fn(sub) for sub in out[key]]
    return out


def _subschemas(node: dict):
    for key in _SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            yield from node[key].values()
    for key in _SCHEMA_ONE:
        if isinstance(node.get(key), dict):
            yield node[key]
    for key in _SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            yield from node[key]


def _refs(node) -> set[str]:
    """Names of all definitions `node` refers to, directly or through its subschemas."""
    found, stack = set(), [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            if isinstance(current.get("$ref"), str):
                found.add(current["$ref"][len(REF_PREFIX):])
            stack.extend(_subschemas(current))
    return found


class StrictConverter:
    """Turns OpenAPI v3 / CRD structural schemas into strict, standalone draft-4 JSON schemas."""

    def __init__(self, definitions: dict[str, dict]):
        self.source = definitions
        self.defs = {name: self.convert(schema) for name, schema in definitions.items()}
        self.cyclic = self._cyclic()
        self._inlined: dict[str, dict] = {}

    # strictness, int-or-string, nullable ---------------------------------------------------------
    def convert(self, node: dict) -> dict:
        if not isinstance(node, dict):
            return node
        out = dict(node)
        out.pop("description", None)  # kubeconform never shows it; two thirds of the bytes
        ref = out.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith(K8S_REF_PREFIX):
                raise SchemaError(f"unsupported $ref {ref}")
            out["$ref"] = REF_PREFIX + ref[len(K8S_REF_PREFIX):]
            siblings = {k: v for k, v in out.items() if k != "$ref"}
            if siblings:  # draft 4 ignores everything next to $ref
                out = {**siblings, "allOf": [{"$ref": out["$ref"]}]}
        if out.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            if "anyOf" not in out and "oneOf" not in out:
                out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if out.get("format") == "int-or-string":
            out.pop("format")  # the oneOf next to it does the work
        preserve = bool(out.get("x-kubernetes-preserve-unknown-fields"))
        if "properties" in out and "additionalProperties" not in out and not preserve:
            out["additionalProperties"] = False
        out = _map_subschemas(out, self.convert)
        if isinstance(out.get("properties"), dict):
            required = set(out.get("required") or ())
            out["properties"] = {
                name: sub if name in required else self.nullable(sub) for name, sub in out["properties"].items()
            }
        if out.pop("nullable", False) is True:
            out = self.nullable(out)
        return out

    def nullable(self, node: dict) -> dict:
        """The same schema, also accepting null (a shallow change: refs go to `@nullable` variants)."""
        if not isinstance(node, dict):
            return node
        out = dict(node)
        typ = out.get("type")
        if isinstance(typ, str) and typ != "null":
            out["type"] = [typ, "null"]
        elif isinstance(typ, list) and "null" not in typ:
            out["type"] = [*typ, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        for key in ("anyOf", "oneOf"):
            if isinstance(out.get(key), list) and {"type": "null"} not in out[key]:
                out[key] = [*out[key], {"type": "null"}]
        if isinstance(out.get("allOf"), list):  # every part must accept null too
            out["allOf"] = [self.nullable(x) for x in out["allOf"]]
        if isinstance(out.get("$ref"), str) and not out["$ref"].endswith(NULLABLE_SUFFIX):
            out["$ref"] += NULLABLE_SUFFIX
        return out

    def definition(self, name: str) -> dict:
        """A converted definition; `<name>@nullable` variants are made on first use."""
        if name not in self.defs:
            base = name.removesuffix(NULLABLE_SUFFIX)
            if base == name or base not in self.defs:
                raise SchemaError(f"unresolved $ref to {name}")
            self.defs[name] = self.nullable(self.defs[base])
        return self.defs[name]

    # inlining -------------------------------------------------------------------------------------
    def _cyclic(self) -> set[str]:
        """Definitions that can reach themselves (JSONSchemaProps); only these stay as $refs."""
        edges = {name: {r.removesuffix(NULLABLE_SUFFIX) for r in _refs(d)} for name, d in self.defs.items()}
        cyclic = set()
        for start in edges:
            seen, stack = set(), list(edges[start])
            while stack:
                name = stack.pop()
                if name == start:
                    cyclic.add(start)
                    break
                if name not in seen:
                    seen.add(name)
                    stack.extend(edges.get(name, ()))
        return cyclic

    def inline(self, node):
        """`node` with every $ref replaced by the definition, except refs into a cycle.

        kubeconform reports only the first level of the error tree in `validationErrors`, and
        every $ref or allOf adds a level; inlined, a typo is reported at its own path.
        """
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref[len(REF_PREFIX):]
            if name.removesuffix(NULLABLE_SUFFIX) in self.cyclic:
                return node
            return self._inline_definition(name)
        all_of = node.get("allOf")
        if (isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict)
                and set(all_of[0]) == {"$ref"} and set(node) - {"allOf"} <= _ANNOTATIONS):
            name = all_of[0]["$ref"][len(REF_PREFIX):]
            if name.removesuffix(NULLABLE_SUFFIX) not in self.cyclic:
                return self._inline_definition(name)
        return _map_subschemas(node, self.inline)

    def _inline_definition(self, name: str) -> dict:
        if name not in self._inlined:
            self._inlined[name] = self.inline(self.definition(name))
        return self._inlined[name]

    def standalone(self, root: dict) -> dict:
        schema = {"$schema": DRAFT4, **self.inline(root)}
        definitions, todo = {}, _refs(schema)
        while todo:
            name = todo.pop()
            if name not in definitions:
                definitions[name] = _map_subschemas(self.definition(name), self.inline)
                todo |= _refs(definitions[name]) - definitions.keys()
        if definitions:
            schema["definitions"] = dict(sorted(definitions.items()))
        return schema
