// Flow-builder graphs for the workflow tests, shaped as React Flow (xyflow) saves them, with the
// extras a client may add: measured sizes, selection and drag state, styles, markers, nested
// data with nulls, unicode, and keys no database field may have.

/** Data keys and values that BSON, MongoDB or FerretDB cannot hold as such. */
export const AWKWARD_DATA_TEXT = String.raw`{
  "$x": 1,
  "a.b": "dotted",
  "$s": {"p": "looks like FerretDB's own metadata"},
  "": "empty key",
  "__proto__": {"polluted": true},
  "constructor": "a string",
  "nul": "before\u0000after",
  "key\u0000nul": "NUL in a key",
  "lone": "\ud800 lone surrogate",
  "emoji": "👩‍⚖️ ⚖️ 法律 — ñ \u2028",
  "nested": {"deep": [null, {"$in": [1, 2]}, [[]], {}], "negative": -0.5, "big": 9007199254740991, "tiny": 1e-300},
  "nothing": null,
  "flag": false
}`;

/**
 * Built with JSON.parse, as the server and a client read JSON: "__proto__" is then an own key,
 * not the object's prototype.
 */
export const awkwardData = (): Record<string, unknown> => JSON.parse(AWKWARD_DATA_TEXT);

export function flowNode(i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `n${i}`,
    type: i === 0 ? 'input' : i % 3 === 0 ? 'askQuestion' : 'default',
    position: { x: i * 180.5, y: (i % 10) * 75 - 300 },
    data: { label: `Step ${i} · ☎`, config: { retries: i % 4, channel: i % 2 ? 'sms' : null } },
    width: 150,
    height: 40,
    selected: i % 5 === 0,
    dragging: false,
    positionAbsolute: { x: i * 180.5, y: (i % 10) * 75 - 300 },
    style: { background: '#fffbe6', border: '1px solid #222' },
    ...extra,
  };
}

export function flowEdge(
  i: number,
  nodeCount: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: `e${i}`,
    source: `n${i % nodeCount}`,
    target: `n${(i * 7 + 1) % nodeCount}`,
    sourceHandle: i % 2 ? 'yes' : null,
    targetHandle: null,
    label: i % 3 ? `if answer ${i}` : null,
    type: 'smoothstep',
    animated: i % 4 === 0,
    markerEnd: { type: 'arrowclosed', width: 20, color: '#333' },
    style: { strokeWidth: 2 },
    ...extra,
  };
}

/** A graph of `nodes` nodes and `edges` edges, every item carrying the awkward data too. */
export function flowGraph(nodes: number, edges: number) {
  return {
    nodes: Array.from({ length: nodes }, (_, i) => flowNode(i, i % 50 === 0 ? { data: awkwardData() } : {})),
    edges: Array.from({ length: edges }, (_, i) =>
      flowEdge(i, nodes, i % 200 === 0 ? { data: awkwardData() } : {}),
    ),
  };
}
