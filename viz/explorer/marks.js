// The explorer's marks on the Graphviz picture: a ‖g‖ label on each edge a backward step lights, placed
// clear of module titles, boxes and other labels, and module titles moved off the edges that run
// through them. Shares one scope with explorer.js (page.html), whose `svg` it reads.

function overlaps(a, b) { return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height; }
function label(edge, text) { // a number near the middle of an edge, on a white ground, clear of cluster titles and boxes
  const path = edge.querySelector("path");
  if (!path) return;
  const length = path.getTotalLength(), ns = "http://www.w3.org/2000/svg";
  const a = path.getPointAtLength(0), b = path.getPointAtLength(length);
  const across = Math.abs(b.x - a.x) > Math.abs(b.y - a.y); // a row (attention's steps): above the boxes
  const t = document.createElementNS(ns, "text");
  t.setAttribute("class", "mt-label");
  t.textContent = text;
  // on a layer of its own above the picture (an edge's own group is drawn under the boxes after it)
  const layer = svg.querySelector("g.mt-labels") || svg.querySelector("g.graph").appendChild(document.createElementNS(ns, "g"));
  layer.setAttribute("class", "mt-labels mt-label");
  const group = layer.appendChild(document.createElementNS(ns, "g"));
  group.appendChild(t);
  const titles = Array.from(svg.querySelectorAll("g.cluster text, rect.mt-label"), (el) => el.getBBox()); // a title (in its tooltip's <a>) or a label placed before
  const boxes = Array.from(svg.querySelectorAll("g.node, g.edge > text:not(.mt-label), g.edge > a > text"), (el) => el.getBBox()); // boxes and edges' own labels
  group.setAttribute("data-edge", edge.querySelector("title").textContent.trim());
  const others = Array.from(svg.querySelectorAll("g.edge.mt-on"), (g) => g.querySelector("path")).filter((q) => q && q !== path).map((q) => {
    const n = q.getTotalLength(), pts = []; // every 3 units along the other lit edges: a label on one would be read as theirs
    for (let d = 0; d <= n; d += 3) pts.push(q.getPointAtLength(d));
    return pts;
  });
  let best = null; // the place that covers least: a module's title counts more than a box
  const beside = [[4, 1], [4, -1]]; // right of the edge, else left
  search: for (const [dy, side] of across ? [[-30, 0], [22, 0], [-44, 0], [36, 0]].concat(beside) : beside) { // above a row first, else below it; right of a column, else left
    for (const f of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8]) { // the place along the edge where it covers least
      const p = path.getPointAtLength(length * f);
      t.setAttribute("text-anchor", !side ? "middle" : side > 0 ? "start" : "end");
      t.setAttribute("x", !side ? p.x : p.x + 6 * side); t.setAttribute("y", p.y + dy);
      const r = t.getBBox(), near = { x: r.x - 3, y: r.y - 3, width: r.width + 6, height: r.height + 6 };
      const hits = 10 * titles.filter((q) => overlaps(r, q)).length + boxes.filter((q) => overlaps(r, q)).length +
        5 * others.filter((pts) => pts.some((q) => q.x >= near.x && q.x <= near.x + near.width && q.y >= near.y && q.y <= near.y + near.height)).length;
      if (best === null || hits < best.hits) best = { hits: hits, p: p, dy: dy, side: side };
      if (!hits) break search;
    }
  }
  const at = best.p;
  t.setAttribute("text-anchor", !best.side ? "middle" : best.side > 0 ? "start" : "end");
  t.setAttribute("x", !best.side ? at.x : at.x + 6 * best.side); t.setAttribute("y", at.y + best.dy);
  const placed = Array.from(layer.querySelectorAll("rect.mt-label"), (el) => el.getBBox());
  for (let k = 0; k < 6 && placed.some((q) => overlaps(t.getBBox(), q)); k++) { // never on a label placed before: below it
    t.setAttribute("y", +t.getAttribute("y") + t.getBBox().height + 3);
  }
  best.dy = +t.getAttribute("y") - at.y;
  const r = t.getBBox(), bg = document.createElementNS(ns, "rect");
  bg.setAttribute("x", r.x - 2); bg.setAttribute("y", r.y - 1); bg.setAttribute("width", r.width + 4); bg.setAttribute("height", r.height + 2);
  bg.setAttribute("class", "mt-label");
  group.insertBefore(bg, t);
  if (best.side) return;
  const lead = document.createElementNS(ns, "line"); // a label above a row: a leader down to its edge
  lead.setAttribute("x1", at.x); lead.setAttribute("y1", best.dy < 0 ? r.y + r.height + 1 : r.y - 1); lead.setAttribute("x2", at.x); lead.setAttribute("y2", at.y);
  lead.setAttribute("class", "mt-label");
  group.insertBefore(lead, bg);
}
function crossed(t, edges) { // does an edge's line run through the text t? (edges: {path, box, points} sampled once)
  const r = t.getBBox();
  return edges.some((e) => {
    if (!overlaps(r, e.box) && e.box.width && e.box.height) return false;
    if (!e.points) { // every 3 units along the edge, computed once for all the titles it passes
      const length = e.path.getTotalLength();
      e.points = [];
      for (let d = 0; d <= length; d += 3) e.points.push(e.path.getPointAtLength(d));
    }
    return e.points.some((p) => p.x >= r.x - 2 && p.x <= r.x + r.width + 2 && p.y >= r.y - 1 && p.y <= r.y + r.height + 1);
  });
}
function clearTitles() { // a module's title that an edge runs through (a residual's branch into ln_2) moves along the box's top
  const edges = Array.from(svg.querySelectorAll("g.edge path"), (path) => ({ path: path, box: path.getBBox(), points: null }));
  svg.querySelectorAll("g.cluster").forEach((c) => {
    const t = c.querySelector("text"), frame = c.querySelector("polygon, path"); // Graphviz wraps them in a tooltip's <a>
    if (!t || !frame || !crossed(t, edges)) return;
    const f = frame.getBBox(), x0 = t.getAttribute("x"), a0 = t.getAttribute("text-anchor");
    for (const [x, anchor] of [[f.x + 8, "start"], [f.x + f.width - 8, "end"]]) {
      t.setAttribute("x", x); t.setAttribute("text-anchor", anchor);
      if (!crossed(t, edges)) return;
    }
    t.setAttribute("x", x0); t.setAttribute("text-anchor", a0);
  });
}
