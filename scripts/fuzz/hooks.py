"""Schemathesis hooks for `npm run fuzz` (scripts/fuzz/run.ts loads this file).

Teaches the fuzzer what our OpenAPI document says in ways JSON Schema tools cannot read:

- the custom string format `iana-time-zone` (firm settings): values are drawn from the
  names the service's runtime knows (FUZZ_TIME_ZONES_FILE, written by run.ts);
- `x-unique-by: <property>` on an array: no two items share that property's value (intake
  questions: `x-unique-by: key`; a repeated key is 400 invalid_request). Positive test cases
  are made to keep the rule; negative cases are left as generated, so the server is still
  asked to reject repeats.
- `x-edges-of: <sibling property>` on an array of edges (workflows: `x-edges-of: nodes`): each
  edge's `source` and `target` are `id`s of the items of that sibling array. Positive cases get
  their ends pointed at existing nodes (edges are dropped when there are none); negative cases
  are left as generated, so dangling edges are still sent.
"""

from __future__ import annotations

import json
import os
from typing import Any

import schemathesis
from hypothesis import strategies as st

UNIQUE_BY = "x-unique-by"
EDGES_OF = "x-edges-of"

_zones_file = os.environ.get("FUZZ_TIME_ZONES_FILE")
if _zones_file:
    with open(_zones_file, encoding="utf-8") as f:
        schemathesis.openapi.format("iana-time-zone", st.sampled_from(json.load(f)))


def _keep_unique(schema: Any, value: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []) + schema.get("allOf", []):
        value = _keep_unique(branch, value)
    if isinstance(value, list):
        items = schema.get("items", {})
        value = [_keep_unique(items, item) for item in value]
        prop = schema.get(UNIQUE_BY)
        if isinstance(prop, str):
            seen: set[str] = set()
            kept = []
            for item in value:
                if isinstance(item, dict) and prop in item:
                    marker = json.dumps(item[prop], sort_keys=True)
                    if marker in seen:
                        continue
                    seen.add(marker)
                kept.append(item)
            value = kept
        return value
    if isinstance(value, dict):
        props = schema.get("properties", {})
        value = {name: _keep_unique(props.get(name), item) for name, item in value.items()}
        for name, prop in props.items():
            if isinstance(prop, dict) and isinstance(prop.get(EDGES_OF), str) and name in value:
                value[name] = _connect_edges(value[name], value.get(prop[EDGES_OF]))
        return value
    return value


def _connect_edges(edges: Any, nodes: Any) -> Any:
    """Edges whose source and target name the ids of `nodes` (x-edges-of)."""
    if not isinstance(edges, list):
        return edges
    ids = [n["id"] for n in nodes if isinstance(n, dict) and isinstance(n.get("id"), str)] if isinstance(nodes, list) else []
    if not ids:
        return [e for e in edges if not isinstance(e, dict)]
    connected = []
    for i, edge in enumerate(edges):
        if isinstance(edge, dict):
            edge = {**edge, "source": ids[i % len(ids)], "target": ids[(i * 7 + 1) % len(ids)]}
        connected.append(edge)
    return connected


_schemas: dict[str, Any] = {}


def _body_schema(operation: Any) -> Any:
    """The JSON body schema of an operation when it uses x-unique-by anywhere, else None."""
    label = operation.label
    if label not in _schemas:
        raw = getattr(getattr(operation, "definition", None), "raw", None)
        schema = None
        if isinstance(raw, dict):
            content = raw.get("requestBody", {}).get("content", {})
            schema = content.get("application/json", {}).get("schema")
        _schemas[label] = schema if UNIQUE_BY in json.dumps(schema) else None
    return _schemas[label]


class InjectedCrash(SystemError):
    """The fuzzer's own crash, made on purpose: see _CRASH."""


# FUZZ_INJECT_CRASH=always|once makes the tool itself crash, to prove that npm run fuzz tells a
# crash of Schemathesis or Hypothesis from a finding about the service (docs/ci.md). Every case
# then raises while Schemathesis generates it, as CPython 3.11's ast SystemError did inside
# Hypothesis. `once` crashes only the first attempt (run.ts sets FUZZ_ATTEMPT), so the retry passes.
_CRASH = os.environ.get("FUZZ_INJECT_CRASH") == "always" or (
    os.environ.get("FUZZ_INJECT_CRASH") == "once" and os.environ.get("FUZZ_ATTEMPT") == "1"
)


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    if _CRASH:
        raise InjectedCrash("AST constructor recursion depth mismatch (injected by FUZZ_INJECT_CRASH)")
    meta = getattr(case, "meta", None)
    if meta is None or not meta.generation.mode.is_positive:
        return case
    schema = _body_schema(case.operation)
    if schema is not None and isinstance(case.body, (dict, list)):
        case.body = _keep_unique(schema, case.body)
    return case

