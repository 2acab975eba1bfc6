// The explorer page: pan and zoom the graph Graphviz laid out, step through the engine's forward
// and backward order, lecture mode and keys. Plain JavaScript, no library; every number comes
// from the JSON that viz.explore wrote into the page. panel.js draws the side panel, marks.js the ‖g‖
// labels and module titles, frame.js the frames saved for slides.

const DATA = JSON.parse(document.getElementById("mt-data").textContent);
const NODES = DATA.nodes;
const STEPS = DATA.forward.map((i) => ({ pass: "forward", node: i }))
  .concat(DATA.backward.map((i) => ({ pass: "backward", node: i })));
const FWD_RANK = {}, BWD_RANK = {};
DATA.forward.forEach((n, k) => { FWD_RANK[n] = k; });
DATA.backward.forEach((n, k) => { BWD_RANK[n] = k; });
const $ = (id) => document.getElementById(id);
const PARENT = {}; // view -> the view it first opens from (for the links at the top)
DATA.views.forEach((view, v) => Object.values(view.opens).forEach((w) => { if (!(w in PARENT) && w !== v && w !== 0) PARENT[w] = v; }));
function chain(v) { const out = [v]; while (v in PARENT && out.length < 50) { v = PARENT[v]; out.unshift(v); } return out; }
function ownBoxSize(v, i) { // how many nodes the smallest box drawing node i in view v stands for
  let best = Infinity;
  Object.values(DATA.views[v].boxes).forEach((m) => { if (m.length < best && m.indexOf(i) >= 0) best = m.length; });
  return best;
}
const state = { step: -1, view: 0, trail: [0], selected: null, timer: null };
let svg = null, boxEls = {}, edgeEls = [], nodeBox = {}, vb = null, home = null;

// ---- views: one Graphviz picture each ------------------------------------------------
function showView(v, keepTrail) {
  state.view = v;
  const view = DATA.views[v];
  if (!keepTrail) {
    const at = state.trail.indexOf(v);
    state.trail = at >= 0 ? state.trail.slice(0, at + 1) : keepTrail === false ? chain(v) : state.trail.concat([v]);
  }
  $("graph").innerHTML = view.svg;
  svg = $("graph").querySelector("svg");
  svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
  const keyTop = pictureKey();
  boxEls = {}; edgeEls = []; nodeBox = {};
  svg.querySelectorAll("g.node").forEach((g) => {
    const id = g.querySelector("title").textContent.trim();
    boxEls[id] = g;
    g.addEventListener("click", (e) => { if (!dragged) clickBox(id); e.stopPropagation(); });
  });
  svg.querySelectorAll("g.edge").forEach((g) => {
    const ends = g.querySelector("title").textContent.trim().split("->");
    edgeEls.push({ src: ends[0], dst: ends[1], el: g });
  });
  // each node lights its most specific box: its own, else the smallest module holding it
  Object.keys(view.boxes).forEach((box) => {
    view.boxes[box].forEach((i) => {
      if (!(i in nodeBox) || view.boxes[nodeBox[i]].length > view.boxes[box].length) nodeBox[i] = box;
    });
  });
  clearTitles();
  const b = svg.viewBox.baseVal;
  home = { x: b.x, y: b.y, w: b.width, h: b.height };
  if (keyTop !== null && keyTop > b.y + b.height / 2) home.h = keyTop - b.y; // the key, at the bottom, moved out: the graph alone
  readable(lecturing() ? LECTURE_SCALE : 0); // a picture opened in lecture mode keeps lecture's large text
  crumbs();
  light();
}
function crumbs() {
  $("crumbs").innerHTML = state.trail.map((v, k) => (k === state.trail.length - 1
    ? "<span>" + esc(DATA.views[v].title) + "</span>"
    : '<a data-view="' + v + '">' + esc(DATA.views[v].title) + "</a>")).join(" ▸ ");
  $("crumbs").querySelectorAll("a").forEach((a) => a.addEventListener("click", () => showView(+a.dataset.view)));
}
function clickBox(id) {
  const view = DATA.views[state.view];
  const members = view.boxes[id] || [];
  if (id in view.opens) { // a module box or a folded run: open it
    showView(view.opens[id]);
    showModule(members);
    return;
  }
  if (!members.length) return;
  select(members[0]);
  if (svg.getScreenCTM().a < 0.6) centre(boxEls[id], READ_SCALE); // clicked in a graph too small to read: zoom to it
}

// ---- pan and zoom: the SVG's viewBox ---------------------------------------------------
function setBox(b) { vb = b; svg.setAttribute("viewBox", [b.x, b.y, b.w, b.h].join(" ")); }
function fit() { if (svg) setBox(Object.assign({}, home)); }
const LECTURE_SCALE = 1.7; // screen pixels per point: Graphviz's 11 pt text reads 19 px
const READ_SCALE = 1.2; // outside lecture mode: 11 pt text reads 13 px, no smaller
function lecturing() { return document.body.classList.contains("lecture"); }
function readable(scale) { // a graph fitted whole has unreadable text: start at its top, at READ_SCALE (lecture: LECTURE_SCALE)
  const r = $("graph").getBoundingClientRect(), fits = Math.min(r.width / home.w, r.height / home.h);
  if (fits >= (scale || READ_SCALE)) { fit(); return; }
  const w = r.width / (scale || READ_SCALE), h = r.height / (scale || READ_SCALE);
  const wide = home.w / r.width > home.h / r.height; // rankdir LR: start at the left end
  const x = wide || home.w > w ? home.x : home.x + home.w / 2 - w / 2; // a wide graph: its left edge
  setBox({ x: x, y: wide && home.h < h ? home.y + home.h / 2 - h / 2 : home.y, w: w, h: h }); // taller than the window: its top, never a box cut there
}
function centre(el, scale) { // put a box (or a screen rectangle) in the middle of the window, at `scale` if given
  const r = el.getBoundingClientRect ? el.getBoundingClientRect() : el, g = $("graph").getBoundingClientRect();
  const c = toSvg(r.left + r.width / 2, r.top + r.height / 2);
  const w = scale ? g.width / scale : vb.w, h = scale ? g.height / scale : vb.h;
  setBox({ x: c.x - w / 2, y: c.y - h / 2, w: w, h: h });
}
function toSvg(cx, cy) {
  const p = svg.createSVGPoint(); p.x = cx; p.y = cy;
  return p.matrixTransform(svg.getScreenCTM().inverse());
}
function zoom(factor, cx, cy) {
  const r = $("graph").getBoundingClientRect();
  const p = toSvg(cx === undefined ? r.left + r.width / 2 : cx, cy === undefined ? r.top + r.height / 2 : cy);
  setBox({ x: p.x - (p.x - vb.x) / factor, y: p.y - (p.y - vb.y) / factor, w: vb.w / factor, h: vb.h / factor });
}
let drag = null, dragged = false;
$("graph").addEventListener("wheel", (e) => { // the wheel scrolls (shift: sideways); with Ctrl (or a pinch) it zooms
  e.preventDefault();
  if (e.ctrlKey || e.metaKey) { zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2, e.clientX, e.clientY); return; }
  const k = vb.w / $("graph").getBoundingClientRect().width, dx = e.shiftKey ? e.deltaY : e.deltaX, dy = e.shiftKey ? 0 : e.deltaY;
  setBox({ x: vb.x + dx * k, y: vb.y + dy * k, w: vb.w, h: vb.h });
}, { passive: false });
$("graph").addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, box: Object.assign({}, vb) }; dragged = false; });
window.addEventListener("mousemove", (e) => {
  if (!drag) return;
  const a = toSvg(drag.x, drag.y), b = toSvg(e.clientX, e.clientY);
  if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 4) dragged = true;
  if (dragged) setBox({ x: vb.x - (b.x - a.x), y: vb.y - (b.y - a.y), w: vb.w, h: vb.h });
  drag.x = e.clientX; drag.y = e.clientY;
});
window.addEventListener("mouseup", () => { drag = null; });
function lit(el, grow) { // the screen rectangle of a lit box and the inputs it reads, if they fit
  const g = $("graph").getBoundingClientRect(), r = el.getBoundingClientRect();
  let u = { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  svg.querySelectorAll("g.node.mt-input").forEach((b) => {
    const q = b.getBoundingClientRect();
    u = { left: Math.min(u.left, q.left), right: Math.max(u.right, q.right), top: Math.min(u.top, q.top), bottom: Math.max(u.bottom, q.bottom) };
  });
  const fits = (u.right - u.left) * grow <= g.width * 0.96 && (u.bottom - u.top) * grow <= g.height * 0.96;
  return fits ? { left: u.left, top: u.top, width: u.right - u.left, height: u.bottom - u.top } : el.getBoundingClientRect();
}
function reveal(el) { // pan (keeping the zoom) when the lit boxes near the window's edge
  const r = lit(el, 1), g = $("graph").getBoundingClientRect();
  const whole = vb.w >= home.w * 0.99 && vb.h >= home.h * 0.99; // the whole graph is on screen
  const mx = whole ? 0 : Math.min(g.width * 0.1, (g.width - r.width) / 2), my = whole ? 0 : Math.min(g.height * 0.1, (g.height - r.height) / 2);
  if (r.left >= g.left + mx && r.left + r.width <= g.right - mx && r.top >= g.top + my && r.top + r.height <= g.bottom - my) return;
  centre(r);
}

// ---- steps ----------------------------------------------------------------------------
function reachedBy(members, s) { // has this pass reached a box standing for `members`?
  if (s.pass === "backward") return members.some((m) => m in BWD_RANK && BWD_RANK[m] <= state.step - DATA.forward.length);
  const ops = members.filter((m) => m in FWD_RANK);
  return ops.length ? ops.some((m) => FWD_RANK[m] <= state.step) : true; // weights and inputs exist before the pass
}
function inPart(module, part) { return module === part || module.startsWith(part + "."); }
function progress(box, i) { // a folded run: which of its blocks the step is in, as a bar under the box
  const parts = (DATA.views[state.view].parts || {})[box];
  if (!parts) return "";
  const k = parts.findIndex((p) => inPart(NODES[i].module, p));
  const g = boxEls[box], r = g.getBBox(), ns = "http://www.w3.org/2000/svg", w = r.width / parts.length;
  const s = STEPS[state.step], done = (p) => parts.indexOf(p) < k === (s.pass === "forward") && p !== parts[k];
  parts.forEach((p, m) => {
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", r.x + m * w + 1); rect.setAttribute("y", r.y + r.height + 3);
    rect.setAttribute("width", w - 2); rect.setAttribute("height", 9);
    rect.setAttribute("class", "mt-part" + (m === k ? " running" : done(p) ? " done" : ""));
    g.appendChild(rect);
  });
  g.querySelectorAll("text").forEach((t) => { if (t.textContent.trim() === String(k)) t.classList.add("mt-running"); });
  return k >= 0 ? " (" + parts[k] + ": block " + (k + 1) + " of " + parts.length + " in the folded box)" : "";
}
function light() {
  Object.values(boxEls).forEach((g) => g.classList.remove("mt-current", "mt-input", "mt-waiting", "mt-selected"));
  edgeEls.forEach((e) => e.el.classList.remove("mt-on", "back"));
  svg.querySelectorAll(".mt-label, .mt-part").forEach((t) => t.remove());
  svg.querySelectorAll(".mt-running").forEach((t) => t.classList.remove("mt-running"));
  if (state.selected !== null && nodeBox[state.selected]) boxEls[nodeBox[state.selected]].classList.add("mt-selected");
  const text = $("step-text");
  hash();
  if (state.step < 0) {
    text.innerHTML = "Before the first step. Press <b>→</b> (or ▶) to run the forward pass op by op in the order the engine ran it, then the backward pass in backward()'s order. Click a box to see its formulas, values and gradients.";
    document.body.dataset.stepNode = "";
    return;
  }
  const s = STEPS[state.step], i = s.node, n = NODES[i];
  document.body.dataset.stepNode = String(i);
  const view = DATA.views[state.view];
  // boxes the engine has not reached yet in this pass are faded (a module box: until one of its ops ran)
  Object.keys(boxEls).forEach((box) => {
    const members = view.boxes[box] || [];
    if (members.length && !reachedBy(members, s)) boxEls[box].classList.add("mt-waiting");
  });
  const box = nodeBox[i], labels = []; // placed once every edge is lit: each label keeps off the others' edges
  n.inputs.forEach((j, k) => {
    const b = nodeBox[j];
    if (b && b !== box) {
      boxEls[b].classList.add("mt-input");
      boxEls[b].classList.remove("mt-waiting");
      edgeEls.filter((e) => e.src === b && e.dst === box).forEach((e, m) => {
        e.el.classList.add("mt-on");
        if (s.pass !== "backward") return;
        e.el.classList.add("back");
        if (m === 0 && n.sent[k] !== null) labels.push([e.el, "‖g‖ " + fmt(n.sent[k])]); // what it sends back
      });
    }
  });
  labels.forEach(([el, words]) => label(el, words));
  let part = "";
  if (box) {
    boxEls[box].classList.remove("mt-waiting", "mt-selected"); boxEls[box].classList.add("mt-current");
    part = progress(box, i);
    reveal(boxEls[box]);
  }
  const total = s.pass === "forward" ? DATA.forward.length : DATA.backward.length;
  const k = s.pass === "forward" ? state.step + 1 : state.step - DATA.forward.length + 1;
  let line = '<span class="pass ' + s.pass + '">' + s.pass + " " + k + " / " + total + "</span> ";
  if (s.pass === "forward") {
    line += "<b>" + esc(nodeName(i)) + "</b>" + esc(where(i)) + esc(part) + " makes " + esc(shape(n.shape)) +
      (n.inputs.length ? " from " + n.inputs.map((j, k2) => esc(inputName(i, k2)) + " " + esc(shape(NODES[j].shape))).join(n.role === "residual" ? " + " : ", ") : "");
    if (k === 1) line += ' <span class="hint">(the ‖g‖ already in the boxes are from this step\'s backward pass, which comes after)</span>';
  } else if (n.kind !== "op") {
    line += "<b>" + esc(nodeName(i)) + "</b>" + esc(part) + " receives its gradient: .grad += g, ‖g‖ = " + fmt(n.grad && n.grad.stats.norm);
  } else {
    line += "<b>" + esc(nodeName(i)) + "</b>" + esc(where(i)) + esc(part) + ": ‖∂L/∂y‖ = " + fmt(n.grad && n.grad.stats.norm) + "; sends " +
      n.inputs.map((j, k2) => "‖g‖ " + fmt(n.sent[k2]) + " to " + esc(inputName(i, k2))).join(", ") +
      n.inputs.map((j, k2) => broadcastNote(i, k2)).filter((t) => t).map((t) => ' <span class="hint">(' + esc(t) + ")</span>").join("");
    if (n.role === "residual") line += ' <span class="hint">(z = x + F(x): both get g unchanged, ∂z/∂x = I + ∂F/∂x)</span>';
  }
  if (!box) line += ' <span class="hint">(not drawn in this picture)</span>';
  text.innerHTML = line;
}
function go(k) {
  state.step = Math.max(-1, Math.min(STEPS.length - 1, k));
  if (state.step < 0) { light(); return; }
  const i = STEPS[state.step].node;
  if (!(i in nodeBox)) { // the step left this picture: follow it into the one that draws it best
    let best = 0;
    DATA.views.forEach((_, v) => { if (ownBoxSize(v, i) < ownBoxSize(best, i)) best = v; });
    if (ownBoxSize(best, i) < Infinity) showView(best, false);
  }
  select(i);
  if (STEPS[state.step].pass === "backward") toGradient();
}
function toGradient() { // a backward step is about the gradient: the panel opens on it, not on the metadata
  const p = $("panel"), g = p.querySelector(".grad-section");
  if (g) p.scrollTop += g.getBoundingClientRect().top - p.getBoundingClientRect().top;
}
function atGradient() {
  const p = $("panel"), g = p.querySelector(".grad-section");
  return !!g && Math.abs(g.getBoundingClientRect().top - p.getBoundingClientRect().top) < 4;
}
function play() {
  if (state.timer) { clearInterval(state.timer); state.timer = null; $("play").textContent = "▶ play"; return; }
  $("play").textContent = "⏸ pause";
  state.timer = setInterval(() => { if (state.step >= STEPS.length - 1) play(); else go(state.step + 1); }, 1000 / +$("speed").value);
}

// ---- where you are: the step in the URL, a jump box ----------------------------------------
function stepName(k) { // "f12" (forward 12) or "b5" (backward 5): the step as the URL and the jump box write it
  return k < DATA.forward.length ? "f" + (k + 1) : "b" + (k - DATA.forward.length + 1);
}
function parseStep(text) { // "f12", "forward 12", "b5", "backward 5", or a bare 12 (the 12th step of all): a step index, else null
  const m = /^\s*(f|forward|b|backward)?\s*(\d+)\s*$/i.exec(text || "");
  if (!m) return null;
  const n = +m[2], back = m[1] && m[1][0].toLowerCase() === "b";
  const k = back ? DATA.forward.length + n - 1 : n - 1;
  return n >= 1 && k < (back ? STEPS.length : m[1] ? DATA.forward.length : STEPS.length) ? k : null;
}
function hash() { // the step in the address: a reload (or a link in the slides) comes back here
  const want = state.step >= 0 ? "#step=" + stepName(state.step) : "";
  if (location.hash !== want) history.replaceState(null, "", want || location.pathname + location.search);
}
const ON_PAGE = new Set(); // the nodes some view of this page draws (a --focus page draws part of the graph)
DATA.views.forEach((view) => Object.values(view.boxes).forEach((m) => m.forEach((i) => ON_PAGE.add(i))));
const jumpState = { text: "", at: -1 };
function matchTier(i, q, raw) { // how well node i answers the query: 0 exact (case kept), 1 exact, 2 a whole word, 3 part of a word; null: no match
  const n = NODES[i], module = n.module || "", last = module.split(".").pop();
  const exact = [n.role, n.op, n.name, module, last, nodeName(i)].filter((w) => w);
  if (exact.indexOf(raw) >= 0) return 0;
  if (exact.some((w) => w.toLowerCase() === q)) return 1;
  const words = [nodeName(i), n.name, module, n.role, "#" + i].join(" ").toLowerCase();
  if (words.split(/[^\w#]+/).indexOf(q) >= 0) return 2;
  return words.indexOf(q) >= 0 ? 3 : null;
}
function noStep(text) { // "f99": a step this page lacks, said as the address says it
  return "no step " + JSON.stringify(text.trim()) + ": this page has f1–f" + DATA.forward.length + " and b1–b" + DATA.backward.length;
}
function jump(text, keep) { // a step ("f12", "b5") or the best-matching node (an exact role, op or module first), the next one on a repeat
  const k = parseStep(text);
  if (k !== null) { go(k); $("jump-info").textContent = ""; return true; }
  const raw = text.trim(), q = raw.toLowerCase();
  if (!q) return false;
  if (/^(f|forward|b|backward)?\s*\d+$/i.test(raw)) { $("jump-info").textContent = noStep(raw); return false; }
  let found = [], best = 4;
  NODES.forEach((n, i) => {
    if (!ON_PAGE.has(i)) return;
    const t = matchTier(i, q, raw);
    if (t === null || t > best) return;
    if (t < best) { best = t; found = []; }
    found.push(i);
  });
  const order = (i) => (i in FWD_RANK ? FWD_RANK[i] : i in BWD_RANK ? DATA.forward.length + BWD_RANK[i] : STEPS.length + i);
  found.sort((a, b) => order(a) - order(b));
  if (!found.length) { $("jump-info").textContent = "no node on this page matches " + JSON.stringify(raw); return false; }
  jumpState.at = jumpState.text === raw ? (jumpState.at + 1) % found.length : 0;
  jumpState.text = raw;
  const i = found[jumpState.at];
  $("jump-info").textContent = (jumpState.at + 1) + " of " + found.length + (best < 2 ? " exact" : "") + (found.length > 1 ? " (Enter: next)" : "");
  if (i in FWD_RANK) go(FWD_RANK[i]);
  else if (i in BWD_RANK) go(DATA.forward.length + BWD_RANK[i]);
  else select(i);
  return true;
}
$("jump").addEventListener("keydown", (e) => {
  // Enter jumps and gives the keys back to the stepper (→ steps at once); Enter again: the next match
  if (e.key === "Enter") { if (jump($("jump").value)) $("jump").blur(); e.preventDefault(); }
  else if (e.key === "Escape") { $("jump").blur(); e.preventDefault(); }
  e.stopPropagation();
});

// ---- the key: what the marks of this page mean, and the picture's own key ---------------------
function pictureKey() { // the picture's key (drawn by Graphviz under the graph) moves into the key box: never clipped
  const root = svg.querySelector("g.graph"), ns = "http://www.w3.org/2000/svg";
  const ground = root.querySelector(":scope > polygon"); // Graphviz's white background: the page has one
  if (ground) ground.remove();
  const parts = Array.from(root.children).filter((el) => !el.matches("title, g.node, g.edge, g.cluster"));
  const holder = $("picture-key");
  holder.innerHTML = "";
  if (!parts.length) return null;
  const keySvg = document.createElementNS(ns, "svg"), g = document.createElementNS(ns, "g");
  parts.forEach((el) => g.appendChild(el));
  keySvg.appendChild(g); holder.appendChild(keySvg);
  setTimeout(() => { // sized once the page is drawn: a getBBox now would lay the whole graph out twice
    const b = g.getBBox();
    keySvg.setAttribute("viewBox", [b.x - 4, b.y - 4, b.width + 8, b.height + 8].join(" "));
    keySvg.style.width = Math.round(b.width + 8) + "px";
    keySvg.style.maxWidth = "100%";
  }, 0);
  let top = Infinity; // the key's top, read from its coordinates (no layout needed)
  parts.forEach((el) => {
    if (el.tagName === "text") top = Math.min(top, +el.getAttribute("y") - +(el.getAttribute("font-size") || 14));
    else if (el.getAttribute("points")) el.getAttribute("points").trim().split(/\s+/).forEach((p) => { top = Math.min(top, +p.split(",")[1]); });
  });
  const m = root.transform.baseVal.consolidate();
  return top < Infinity ? top + (m ? m.matrix.f : 0) - 6 : null; // in the picture's coordinates
}

// ---- lecture mode and keys ----------------------------------------------------------------
function lecture(on) {
  const want = on === undefined ? !document.body.classList.contains("lecture") : on;
  document.body.classList.toggle("lecture", want);
  try {
    if (want && document.documentElement.requestFullscreen && !document.fullscreenElement) {
      document.documentElement.requestFullscreen().catch(() => {});
    } else if (!want && document.fullscreenElement) document.exitFullscreen().catch(() => {});
  } catch (e) { /* no full screen here: large text is still on */ }
  setTimeout(() => { // lecture: boxes as large as the text around them; else the usual view
    const box = state.step >= 0 ? nodeBox[STEPS[state.step].node] : null;
    if (box && want) centre(lit(boxEls[box], LECTURE_SCALE / svg.getScreenCTM().a), LECTURE_SCALE);
    else readable(want ? LECTURE_SCALE : 0);
    refreshPanel();
  }, 100);
}
function refreshPanel() { // the heatmaps are sized to the panel: draw them again when it changes size
  const top = $("panel").scrollTop, s = STEPS[state.step];
  const anchored = atGradient() || (s && s.pass === "backward" && s.node === state.selected && top > 0);
  if (state.selected !== null && $("panel").querySelector("canvas.heat")) { select(state.selected); if (anchored) toGradient(); else $("panel").scrollTop = top; }
}
let resizing = null;
window.addEventListener("resize", () => { clearTimeout(resizing); resizing = setTimeout(refreshPanel, 150); });
function nextHead(by) { // H / Shift+H: every heatmap of the panel shows the next (previous) head
  $("panel").querySelectorAll("select.head").forEach((sel) => {
    sel.value = String((+sel.value + by + sel.options.length) % sel.options.length);
    sel.dispatchEvent(new Event("change"));
  });
}
const KEYS = [["→ / ←", "next / previous step"], ["Home / End", "first / last step"], ["space", "play or pause"],
  ["/", "jump: a role, op or name (A, softmax, ln_f) or a step (f12, b5), Enter: → steps on from there; Enter again: the next match"],
  ["↓ / ↑, PgDn / PgUp", "scroll the panel (to its heatmaps)"], ["H / Shift+H", "next / previous head in the panel's heatmaps"],
  ["+ / −", "zoom in / out"], ["F", "fit the graph to the window"], ["U", "up: back out of an opened module"],
  ["O", "open the module the current step is in"], ["K", "the key: whole, marks alone, hidden"], ["S / P", "save this frame as SVG / PNG (for slides)"],
  ["L", "lecture mode (full screen, large text)"], ["Esc", "close this list; again: leave lecture mode"], ["?", "this list"]];
const MOUSE = [["click a box", "its panel: formulas, statistics, heatmaps"], ["click a 3-D box", "open the module (the links at the top go back out)"],
  ["drag", "pan the graph"], ["wheel / Shift+wheel", "scroll the graph down / sideways"], ["Ctrl+wheel, pinch", "zoom"],
  ["point at a heatmap", "read a cell's value"], ["head menu (above a heatmap)", "which attention head (or slice) the heatmap shows; H steps it"],
  ["speed menu", "steps per second when playing; → still steps after choosing"], ["step links in the panel", "jump the stepper to that node"]];
// two columns, keys and mouse side by side: the whole list fits a 1366 × 768 screen in lecture mode
$("keys").innerHTML = "<div class='cols'><div><b>Keys</b><table>" + KEYS.map(([k, v]) => row(k, v)).join("") + "</table></div><div><b>Mouse</b><table>" +
  MOUSE.map(([k, v]) => row(k, v)).join("") + "</table><div class='hint'>The address keeps the step (#step=f12): a reload or a link comes back to it.</div></div></div>" +
  "<div id='keys-more' class='hint' hidden>▼ more below: scroll</div>";
function keysMore() { // a sign that the list goes on below, where a small window still cuts it
  const k = $("keys");
  $("keys-more").hidden = k.hidden || k.scrollTop + k.clientHeight >= k.scrollHeight - 2;
}
$("keys").addEventListener("scroll", keysMore);
function toggleHelp() { $("keys").hidden = !$("keys").hidden; keysMore(); }
function openCurrent() {
  const i = state.step >= 0 ? STEPS[state.step].node : state.selected;
  const box = nodeBox[i], view = DATA.views[state.view];
  if (box && box in view.opens) { showView(view.opens[box]); light(); }
}
function typing(el) { // keys belong to a text field while one has the focus; menus and buttons leave them to the stepper
  return el && (el.tagName === "TEXTAREA" || el.isContentEditable || (el.tagName === "INPUT" && !/^(button|checkbox|radio|range|submit)$/.test(el.type)));
}
document.addEventListener("keydown", (e) => {
  if (typing(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
  const k = e.key, p = $("panel");
  if (e.target.tagName === "SELECT") e.target.blur(); // a menu chosen with the mouse keeps no keys
  if (k === "ArrowRight") go(state.step + 1);
  else if (k === "ArrowLeft") go(state.step - 1);
  else if (k === "Home") go(-1);
  else if (k === "End") go(STEPS.length - 1);
  else if (k === " ") play();
  else if (k === "ArrowDown") p.scrollBy(0, 80);
  else if (k === "ArrowUp") p.scrollBy(0, -80);
  else if (k === "PageDown") p.scrollBy(0, p.clientHeight * 0.85);
  else if (k === "PageUp") p.scrollBy(0, -p.clientHeight * 0.85);
  else if (k === "h") nextHead(1);
  else if (k === "H") nextHead(-1);
  else if (k === "/") $("jump").focus();
  else if (k === "+" || k === "=") zoom(1.25);
  else if (k === "-") zoom(0.8);
  else if (k === "f" || k === "F") fit();
  else if (k === "l" || k === "L") lecture();
  else if (k === "k" || k === "K") toggleKey();
  else if (k === "s" || k === "S") saveSvg();
  else if (k === "p" || k === "P") savePng();
  else if (k === "Escape") { if (!$("keys").hidden) $("keys").hidden = true; else lecture(false); } // the topmost first
  else if (k === "u" || k === "U") { if (state.trail.length > 1) showView(state.trail[state.trail.length - 2]); }
  else if (k === "o" || k === "O") openCurrent();
  else if (k === "?") toggleHelp();
  else if (k === "Enter" && jumpState.text && $("jump").value.trim() === jumpState.text) jump(jumpState.text); // the next match
  else return;
  e.preventDefault();
});
$("first").addEventListener("click", () => go(-1));
$("prev").addEventListener("click", () => go(state.step - 1));
$("next").addEventListener("click", () => go(state.step + 1));
$("last").addEventListener("click", () => go(STEPS.length - 1));
$("play").addEventListener("click", play);
$("speed").addEventListener("change", () => { $("speed").blur(); if (state.timer) { play(); play(); } });
$("fit").addEventListener("click", fit);
$("lecture").addEventListener("click", () => lecture());
$("help").addEventListener("click", toggleHelp);
$("save-svg").addEventListener("click", saveSvg);
$("save-png").addEventListener("click", savePng);
$("key-toggle").addEventListener("click", toggleKey);
function toggleKey() { // K: the whole key → the marks alone → none → the whole key; the graph takes the room it leaves
  const el = $("legend");
  if (el.hidden) { el.hidden = false; el.classList.remove("brief"); } else if (!el.classList.contains("brief")) el.classList.add("brief"); else el.hidden = true;
  if (svg && vb) setBox(vb);
}
if (!DATA.views.some((view) => Object.keys(view.parts || {}).length)) $("key-part").hidden = true; // no folded run on this page
if (innerHeight < 900) $("legend").classList.add("brief"); // a laptop: the marks alone, K shows the whole key
document.querySelectorAll("#bar button").forEach((b) => b.addEventListener("mouseup", () => b.blur())); // space and arrows stay the stepper's

const asked = (/#step=([^&]*)/.exec(location.hash) || [])[1]; // read before the first picture clears it
const linked = parseStep(asked);
showView(0);
intro();
if (linked !== null) go(linked); // a link (or a reload) to a step
window.addEventListener("hashchange", () => { // a second link in the same tab, or Back: go there too
  const k = parseStep((/#step=([^&]*)/.exec(location.hash) || [])[1]);
  if (k !== null && k !== state.step) go(k);
});
if (linked === null && asked !== undefined) { // a step this page does not have: say so, where the jump box answers
  $("jump-info").textContent = "the address asks for step " + JSON.stringify(decodeURIComponent(asked)) + "; this page has f1–f" +
    DATA.forward.length + " and b1–b" + DATA.backward.length;
}
document.body.dataset.readyMs = performance.now().toFixed(0); // since navigation began
document.body.dataset.ready = "1";
