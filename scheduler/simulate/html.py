"""`--html`: the outcome as one self-contained page (inline CSS, JS and SVG; no external URL).

The page carries the JSON report (`report.to_json`) and renders it in the browser: the what-ifs
(nodes added, removed and drained, each eviction or why a PDB blocked it, --fit's answer, the
manifests ignored), the placements table (with the devices claims got), a table per zone and
one SVG chart per node with cpu and memory requested before and after against allocatable
(added, removed and drained nodes marked), and the pending pods with their reasons.
"""

from __future__ import annotations

import json
from typing import Any

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:14px}
th{background:#f3f3f3}
.nodes{display:flex;flex-wrap:wrap;gap:1em}
.node{border:1px solid #ddd;padding:.5em;border-radius:4px}
.node h3{margin:.2em 0;font-size:14px}
.pending li{margin:.3em 0}
.node.added{border-color:#2a8c4a}.node.removed{border-color:#b33;opacity:.7}
.node.drained{border-color:#c80}
.state{font-weight:normal;font-size:12px;margin-left:.5em}
.legend span{display:inline-block;width:1em;height:1em;margin:0 .3em 0 1em;vertical-align:middle}
"""

_SCRIPT = """
(function () {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const el = (tag, attrs, text) => {
    const ns = ['svg', 'rect', 'text', 'line'].includes(tag) ? 'http://www.w3.org/2000/svg' : null;
    const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const pct = (used, total) => total ? Math.round(100 * used / total) + '%' : '-';
  const mem = (v) => {
    for (const [u, s] of [['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]]) {
      if (v >= s) return (Math.round(10 * v / s) / 10) + u;
    }
    return String(v);
  };
  const show = {cpu: (v) => v + 'm', memory: mem};

  const summary = document.getElementById('summary');
  const total = data.placements.length + data.pending.length;
  summary.textContent = data.placements.length + ' of ' + total + ' added pods scheduled, ' +
    data.pending.length + ' pending';
  if (data.capacity) {
    const c = data.capacity;
    document.getElementById('capacity').textContent = 'Capacity: ' + (c.limitReached ? 'at least ' : '') +
      c.fits + ' more copies of ' + c.pod + ' fit' + (c.stoppedBy ? '; the next one: ' + c.stoppedBy : '');
  }

  const whatifs = document.getElementById('whatifs');
  const said = (cls, text) => whatifs.appendChild(el('li', {class: cls}, text));
  for (const n of data.nodesAdded) said('added-node', 'added node ' + n);
  for (const n of data.nodesRemoved) said('removed-node', 'removed node ' + n);
  for (const n of data.drained) said('drained-node', 'drained node ' + n);
  const fates = {replaced: 'evicted, its controller makes a new one', gone: 'evicted, nothing recreates it',
    removed: 'deleted with its node'};
  for (const e of data.evictions) {
    said('eviction ' + e.result, e.pod + ' on ' + e.node + ': ' +
      (fates[e.result] || 'eviction blocked: ' + e.message));
  }
  if (data.fit) {
    const f = data.fit;
    const tried = Object.entries(f.tried).map(([n, left]) => n + ': ' + left + ' pending').join(', ');
    const none = 'fit: nothing is pending, no node like ' + f.template + ' is needed';
    said('fit', !f.pods ? none : f.nodes === null
      ? 'fit: cannot fit the ' + f.pods + ' pending pod(s) with up to ' + f.bound + ' nodes like ' +
        f.template + (f.stillPending ? ' (' + f.stillPending + ')' : '') + '; tried ' + tried
      : 'fit: ' + f.nodes + ' node(s) like ' + f.template + ' place all ' + f.pods +
        ' pending pod(s); tried ' + tried);
  }
  for (const i of data.ignored) said('ignored', 'ignored ' + i + ' (the scheduler does not read it)');
  if (!whatifs.children.length) said('', 'none');

  const table = document.getElementById('placements');
  const head = table.appendChild(el('tr', {}));
  head.append(el('th', {}, 'Pod'), el('th', {}, 'Node'), el('th', {}, 'From'), el('th', {}, 'Devices'));
  const rows = data.placements.concat(
    data.alsoPlaced.map((p) => ({pod: p.pod, node: p.node, source: 'pending in the snapshot', devices: []})));
  for (const p of rows) {
    const row = el('tr', {class: 'placement'});
    row.append(el('td', {}, p.pod), el('td', {}, p.node), el('td', {}, p.source),
      el('td', {}, (p.devices || []).join(', ')));
    table.appendChild(row);
  }

  const zones = document.getElementById('zones');
  const zhead = zones.appendChild(el('tr', {}));
  for (const title of ['Zone', 'Nodes', 'CPU requested', 'Memory requested']) {
    zhead.appendChild(el('th', {}, title));
  }
  const share = (r, res) => show[res](r.before) + ' / ' + show[res](r.allocatableBefore) + ' (' +
    pct(r.before, r.allocatableBefore) + ') → ' + show[res](r.after) + ' / ' + show[res](r.allocatable) +
    ' (' + pct(r.after, r.allocatable) + ')';
  for (const z of data.zones) {
    const row = el('tr', {class: 'zone'});
    row.append(el('td', {}, z.zone || '(no zone label)'), el('td', {}, z.nodesBefore + ' → ' + z.nodesAfter),
      el('td', {}, share(z.cpu, 'cpu')), el('td', {}, share(z.memory, 'memory')));
    zones.appendChild(row);
  }

  const nodes = document.getElementById('nodes');
  for (const n of data.utilization) {
    const box = el('div', {class: 'node' + (n.state ? ' ' + n.state : '')});
    const title = box.appendChild(el('h3', {}, n.node));
    const about = [n.zone ? 'zone ' + n.zone : '', n.state].filter((x) => x).join(', ');
    if (about) title.appendChild(el('span', {class: 'state'}, about));
    const svg = el('svg', {width: 320, height: 112, role: 'img'});
    ['cpu', 'memory'].forEach((res, i) => {
      const r = n[res];
      const y = 8 + i * 52;
      const scale = (v) => r.allocatable ? Math.min(300 * v / r.allocatable, 300) : 0;
      const bar = (top, width, fill, cls) =>
        svg.appendChild(el('rect', {x: 10, y: y + top, width: width, height: 12, fill: fill, class: cls}));
      bar(14, 300, '#eee', 'track');
      bar(14, scale(r.before), '#9bb7d4', 'before');
      bar(28, 300, '#eee', 'track');
      bar(28, scale(r.after), '#2f6fad', 'after');
      svg.appendChild(el('text', {x: 10, y: y + 10, 'font-size': 11},
        res + ' ' + show[res](r.before) + ' → ' + show[res](r.after) + ' / ' + show[res](r.allocatable) +
        ' (' + pct(r.before, r.allocatable) + ' → ' + pct(r.after, r.allocatable) + ')'));
    });
    box.appendChild(svg);
    nodes.appendChild(box);
  }

  const pending = document.getElementById('pending');
  for (const p of data.pending) {
    const item = el('li', {class: 'pending-pod'});
    const why = ' (' + p.source + '): ' + p.reason + ': ' + p.message;
    item.append(el('b', {}, p.pod), document.createTextNode(why));
    if (p.suggestions.length) {
      const hints = el('ul', {class: 'suggestions'});
      for (const s of p.suggestions) hints.appendChild(el('li', {}, 'suggestion: ' + s));
      item.appendChild(hints);
    }
    pending.appendChild(item);
  }
  if (!data.pending.length) pending.appendChild(el('li', {}, 'none'));
  document.body.setAttribute('data-rendered', 'true');
})();
"""


def render(report: dict[str, Any], title: str = "pyscheduler simulate") -> str:
    """The page for one JSON report."""
    data = json.dumps(report).replace("</", "<\\/")  # never closes the script element early
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_escape(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>{_escape(title)}</h1>
<p id="summary"></p>
<p id="capacity"></p>
<h2>What-ifs</h2>
<ul id="whatifs"></ul>
<h2>Placements</h2>
<table id="placements"></table>
<h2>Zones (requested / allocatable, before → after)</h2>
<table id="zones"></table>
<h2>Node utilization (requested / allocatable, before → after)</h2>
<p class="legend"><span style="background:#9bb7d4"></span>before
<span style="background:#2f6fad"></span>after</p>
<div class="nodes" id="nodes"></div>
<h2>Pending</h2>
<ul class="pending" id="pending"></ul>
<script id="report-data" type="application/json">{data}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
