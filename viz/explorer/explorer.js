// The explorer page: pan and zoom the graph Graphviz laid out, step through the engine's forward
// and backward order, lecture mode and keys. Plain JavaScript, no library; every number comes
// from the JSON that viz.explore wrote into the page. panel.js draws the side panel.

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
  const b = svg.viewBox.baseVal;
  home = { x: b.x, y: b.y, w: b.width, h: b.height };
  readable();
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
  if (svg.getScreenCTM().a < 0.6) centre(boxEls[id], 0.9); // clicked in a graph too small to read: zoom to it
}

// ---- pan and zoom: the SVG's viewBox ---------------------------------------------------
function setBox(b) { vb = b; svg.setAttribute("viewBox", [b.x, b.y, b.w, b.h].join(" ")); }
function fit() { if (svg) setBox(Object.assign({}, home)); }
const LECTURE_SCALE = 1.7; // screen pixels per point: Graphviz's 11 pt text reads 19 px
function readable(scale) { // a tall graph fitted whole has unreadable text: start at its top
  const r = $("graph").getBoundingClientRect(), fits = Math.min(r.width / home.w, r.height / home.h);
  if (!scale && fits >= 0.6) { fit(); return; }
  const w = r.width / (scale || 0.9), h = r.height / (scale || 0.9); // 0.9: 11 pt text still reads
  const wide = home.w / r.width > home.h / r.height; // rankdir LR: start at the left end
  const x = wide || home.w > w ? home.x : home.x + home.w / 2 - w / 2; // a wide graph: its left edge
  setBox({ x: x, y: wide ? home.y + home.h / 2 - h / 2 : home.y, w: w, h: h });
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
$("graph").addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2, e.clientX, e.clientY); }, { passive: false });
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
  const fits = (u.right - u.left) * grow <= g.width * 0.8 && (u.bottom - u.top) * grow <= g.height * 0.8;
  return fits ? { left: u.left, top: u.top, width: u.right - u.left, height: u.bottom - u.top } : el.getBoundingClientRect();
}
function reveal(el) { // pan (keeping the zoom) when the lit boxes near the window's edge
  const r = lit(el, 1), g = $("graph").getBoundingClientRect();
  const whole = vb.w >= home.w * 0.99 && vb.h >= home.h * 0.99; // the whole graph is on screen
  const mx = whole ? 0 : g.width * 0.1, my = whole ? 0 : g.height * 0.1;
  if (r.left >= g.left + mx && r.left + r.width <= g.right - mx && r.top >= g.top + my && r.top + r.height <= g.bottom - my) return;
  centre(r);
}

// ---- steps ----------------------------------------------------------------------------
function light() {
  Object.values(boxEls).forEach((g) => g.classList.remove("mt-current", "mt-input", "mt-waiting", "mt-selected"));
  edgeEls.forEach((e) => e.el.classList.remove("mt-on", "back"));
  svg.querySelectorAll(".mt-label").forEach((t) => t.remove());
  if (state.selected !== null && nodeBox[state.selected]) boxEls[nodeBox[state.selected]].classList.add("mt-selected");
  const text = $("step-text");
  if (state.step < 0) {
    text.innerHTML = "Before the first step. Press <b>→</b> (or ▶) to run the forward pass op by op in the order the engine ran it, then the backward pass in backward()'s order. Click a box to see its formulas, values and gradients.";
    document.body.dataset.stepNode = "";
    return;
  }
  const s = STEPS[state.step], i = s.node, n = NODES[i];
  document.body.dataset.stepNode = String(i);
  const view = DATA.views[state.view];
  // boxes the engine has not reached yet in this pass are faded
  Object.keys(boxEls).forEach((box) => {
    const members = view.boxes[box] || [];
    const reached = members.some((m) => (s.pass === "forward"
      ? (m in FWD_RANK ? FWD_RANK[m] <= state.step : NODES[m].kind !== "op")
      : (m in BWD_RANK && BWD_RANK[m] <= state.step - DATA.forward.length)));
    if (!reached && members.length) boxEls[box].classList.add("mt-waiting");
  });
  const box = nodeBox[i];
  n.inputs.forEach((j, k) => {
    const b = nodeBox[j];
    if (b && b !== box) {
      boxEls[b].classList.add("mt-input");
      boxEls[b].classList.remove("mt-waiting");
      edgeEls.filter((e) => e.src === b && e.dst === box).forEach((e, m) => {
        e.el.classList.add("mt-on");
        if (s.pass !== "backward") return;
        e.el.classList.add("back");
        if (m === 0 && n.sent[k] !== null) label(e.el, "‖g‖ " + fmt(n.sent[k])); // what it sends back
      });
    }
  });
  if (box) { boxEls[box].classList.remove("mt-waiting"); boxEls[box].classList.add("mt-current"); reveal(boxEls[box]); }
  const total = s.pass === "forward" ? DATA.forward.length : DATA.backward.length;
  const k = s.pass === "forward" ? state.step + 1 : state.step - DATA.forward.length + 1;
  let line = '<span class="pass ' + s.pass + '">' + s.pass + " " + k + " / " + total + "</span> ";
  if (s.pass === "forward") {
    line += "<b>" + esc(nodeName(i)) + "</b>" + esc(where(i)) + " makes " + esc(shape(n.shape)) +
      (n.inputs.length ? " from " + n.inputs.map((j) => esc(nodeName(j)) + " " + esc(shape(NODES[j].shape))).join(", ") : "");
    if (k === 1) line += ' <span class="hint">(the ‖g‖ already in the boxes are from this step\'s backward pass, which comes after)</span>';
  } else if (n.kind !== "op") {
    line += "<b>" + esc(nodeName(i)) + "</b> receives its gradient: .grad += g, ‖g‖ = " + fmt(n.grad && n.grad.stats.norm);
  } else {
    line += "<b>" + esc(nodeName(i)) + "</b>" + esc(where(i)) + ": ‖∂L/∂y‖ = " + fmt(n.grad && n.grad.stats.norm) + "; sends " +
      n.inputs.map((j, k2) => "‖g‖ " + fmt(n.sent[k2]) + " to " + esc(nodeName(j))).join(", ");
  }
  if (!box) line += ' <span class="hint">(not drawn in this picture)</span>';
  text.innerHTML = line;
}
function label(edge, text) { // a number at the middle of an edge, on a white ground
  const path = edge.querySelector("path");
  if (!path) return;
  const length = path.getTotalLength(), ns = "http://www.w3.org/2000/svg";
  const at = path.getPointAtLength(length / 2), a = path.getPointAtLength(0), b = path.getPointAtLength(length);
  const across = Math.abs(b.x - a.x) > Math.abs(b.y - a.y); // a row (attention's steps): above the boxes
  const t = document.createElementNS(ns, "text");
  t.setAttribute("x", across ? at.x : at.x + 6); t.setAttribute("y", across ? at.y - 30 : at.y + 4);
  t.setAttribute("text-anchor", across ? "middle" : "start"); t.setAttribute("class", "mt-label");
  t.textContent = text;
  edge.appendChild(t);
  const r = t.getBBox(), bg = document.createElementNS(ns, "rect");
  bg.setAttribute("x", r.x - 2); bg.setAttribute("y", r.y - 1); bg.setAttribute("width", r.width + 4); bg.setAttribute("height", r.height + 2);
  bg.setAttribute("class", "mt-label");
  edge.insertBefore(bg, t);
  if (!across) return;
  const lead = document.createElementNS(ns, "line"); // a label above a row: a leader down to its edge
  lead.setAttribute("x1", at.x); lead.setAttribute("y1", r.y + r.height + 1); lead.setAttribute("x2", at.x); lead.setAttribute("y2", at.y);
  lead.setAttribute("class", "mt-label");
  edge.insertBefore(lead, bg);
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
}
function play() {
  if (state.timer) { clearInterval(state.timer); state.timer = null; $("play").textContent = "▶ play"; return; }
  $("play").textContent = "⏸ pause";
  state.timer = setInterval(() => { if (state.step >= STEPS.length - 1) play(); else go(state.step + 1); }, 1000 / +$("speed").value);
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
  }, 100);
}
const KEYS = [["→ / ←", "next / previous step"], ["Home / End", "first / last step"], ["space", "play or pause"],
  ["+ / −", "zoom in / out"], ["F", "fit the graph to the window"], ["U", "up: back out of an opened module"],
  ["O", "open the module the current step is in"], ["L", "lecture mode (full screen, large text)"], ["Esc", "leave lecture mode"], ["?", "this list"]];
$("keys").innerHTML = "<b>Keys</b><table>" + KEYS.map(([k, v]) => row(k, v)).join("") + "</table>";
function openCurrent() {
  const i = state.step >= 0 ? STEPS[state.step].node : state.selected;
  const box = nodeBox[i], view = DATA.views[state.view];
  if (box && box in view.opens) { showView(view.opens[box]); light(); }
}
document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "SELECT" || e.target.tagName === "INPUT") return;
  const k = e.key;
  if (k === "ArrowRight") go(state.step + 1);
  else if (k === "ArrowLeft") go(state.step - 1);
  else if (k === "Home") go(-1);
  else if (k === "End") go(STEPS.length - 1);
  else if (k === " ") play();
  else if (k === "+" || k === "=") zoom(1.25);
  else if (k === "-") zoom(0.8);
  else if (k === "f" || k === "F") fit();
  else if (k === "l" || k === "L") lecture();
  else if (k === "Escape") { lecture(false); $("keys").hidden = true; }
  else if (k === "u" || k === "U") { if (state.trail.length > 1) showView(state.trail[state.trail.length - 2]); }
  else if (k === "o" || k === "O") openCurrent();
  else if (k === "?") $("keys").hidden = !$("keys").hidden;
  else return;
  e.preventDefault();
});
$("first").addEventListener("click", () => go(-1));
$("prev").addEventListener("click", () => go(state.step - 1));
$("next").addEventListener("click", () => go(state.step + 1));
$("last").addEventListener("click", () => go(STEPS.length - 1));
$("play").addEventListener("click", play);
$("speed").addEventListener("change", () => { if (state.timer) { play(); play(); } });
$("fit").addEventListener("click", fit);
$("lecture").addEventListener("click", () => lecture());
$("help").addEventListener("click", () => { $("keys").hidden = !$("keys").hidden; });

showView(0);
intro();
document.body.dataset.readyMs = performance.now().toFixed(0); // since navigation began
document.body.dataset.ready = "1";
