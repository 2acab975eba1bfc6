// The explorer page: pan and zoom the graph Graphviz laid out, step through the engine's forward
// and backward order, show a node's formulas, statistics and heatmaps. Plain JavaScript, no
// library; every number comes from the JSON that viz.explore wrote into the page.
(function () {
  "use strict";
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

  // ---- numbers -------------------------------------------------------------------------
  function fmt(x) { // viz.style.fmt_number: 3 significant digits, powers of ten outside 1e-3..1e3
    if (x === null || x === undefined) return "–";
    if (x === 0) return "0";
    const [m, e] = x.toExponential(2).split("e");
    if (+e >= -3 && +e < 3) return String(Number(x.toPrecision(3)));
    return m + "e" + (+e);
  }
  function count(n, unit) {
    for (const [p, s] of [["G", 1e9], ["M", 1e6], ["k", 1e3]]) {
      if (n >= s) return (n / s).toPrecision(3) + " " + p + unit;
    }
    return n + " " + unit;
  }
  const shape = (s) => "[" + s.join(", ") + "]";
  const esc = (t) => String(t).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  function nodeName(i) {
    const n = NODES[i];
    if (n.kind === "op") return n.op + (n.role ? " (" + n.role + ")" : "");
    return n.name || n.kind;
  }
  function where(i) { return NODES[i].module ? " in " + NODES[i].module : ""; }

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
    if (members.length) select(members[0]);
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
  function centre(el, scale) { // put a box in the middle of the window, at `scale` if given
    const r = el.getBoundingClientRect(), g = $("graph").getBoundingClientRect();
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
  function reveal(el) { // pan (keeping the zoom) when a lit box nears the window's edge
    const r = el.getBoundingClientRect(), g = $("graph").getBoundingClientRect();
    const whole = vb.w >= home.w * 0.99 && vb.h >= home.h * 0.99; // the whole graph is on screen
    const mx = whole ? 0 : g.width * 0.15, my = whole ? 0 : g.height * 0.15;
    if (r.left >= g.left + mx && r.right <= g.right - mx && r.top >= g.top + my && r.bottom <= g.bottom - my) return;
    centre(el);
  }

  // ---- steps ----------------------------------------------------------------------------
  function light() {
    Object.values(boxEls).forEach((g) => g.classList.remove("mt-current", "mt-input", "mt-waiting", "mt-selected"));
    edgeEls.forEach((e) => e.el.classList.remove("mt-on", "back"));
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
    n.inputs.forEach((j) => {
      const b = nodeBox[j];
      if (b && b !== box) {
        boxEls[b].classList.add("mt-input");
        boxEls[b].classList.remove("mt-waiting");
        edgeEls.forEach((e) => { if (e.src === b && e.dst === box) e.el.classList.add("mt-on"); if (e.src === b && e.dst === box && s.pass === "backward") e.el.classList.add("back"); });
      }
    });
    if (box) { boxEls[box].classList.remove("mt-waiting"); boxEls[box].classList.add("mt-current"); reveal(boxEls[box]); }
    const total = s.pass === "forward" ? DATA.forward.length : DATA.backward.length;
    const k = s.pass === "forward" ? state.step + 1 : state.step - DATA.forward.length + 1;
    let line = '<span class="pass ' + s.pass + '">' + s.pass + " " + k + " / " + total + "</span> ";
    if (s.pass === "forward") {
      line += "<b>" + esc(nodeName(i)) + "</b>" + esc(where(i)) + " makes " + esc(shape(n.shape)) +
        (n.inputs.length ? " from " + n.inputs.map((j) => esc(nodeName(j)) + " " + esc(shape(NODES[j].shape))).join(", ") : "");
    } else if (n.kind !== "op") {
      line += "<b>" + esc(nodeName(i)) + "</b> receives its gradient: .grad += g, ‖g‖ = " + fmt(n.grad && n.grad.stats.norm);
    } else {
      line += "<b>" + esc(nodeName(i)) + "</b>" + esc(where(i)) + ": ‖∂L/∂y‖ = " + fmt(n.grad && n.grad.stats.norm) + "; sends " +
        n.inputs.map((j, k2) => "‖g‖ " + fmt(n.sent[k2]) + " to " + esc(nodeName(j))).join(", ");
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
  }
  function play() {
    if (state.timer) { clearInterval(state.timer); state.timer = null; $("play").textContent = "▶ play"; return; }
    $("play").textContent = "⏸ pause";
    state.timer = setInterval(() => { if (state.step >= STEPS.length - 1) play(); else go(state.step + 1); }, 1000 / +$("speed").value);
  }

  // ---- the panel: one node ----------------------------------------------------------------
  const decoded = new Map();
  function codes(heat) {
    if (!decoded.has(heat)) {
      const bin = atob(heat.codes), out = new Uint8Array(bin.length);
      for (let k = 0; k < bin.length; k++) out[k] = bin.charCodeAt(k);
      decoded.set(heat, out);
    }
    return decoded.get(heat);
  }
  function colour(v, lo, hi) { // sequential for values ≥ 0 (attention weights), else diverging
    if (lo >= 0) { const t = hi > 0 ? v / hi : 0; return [255 - 192 * t, 255 - 255 * t, 255 - 130 * t]; }
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1, t = Math.max(-1, Math.min(1, v / m));
    return t < 0 ? [255 + 222 * t, 255 + 150 * t, 255 + 50 * t] : [255 - 40 * t, 255 - 215 * t, 255 - 200 * t];
  }
  function maskOf(i, heat) { // −inf scores of an input of the same slice: the masked positions
    for (const j of NODES[i].inputs) {
      const h = NODES[j].value && NODES[j].value.heat;
      if (h && h.shape.join() === heat.shape.join()) {
        const c = codes(h);
        if (c.some((x) => x === 252)) return c;
      }
    }
    return null;
  }
  function drawHeat(canvas, heat, group, mask, readout) {
    const [, rows, cols] = heat.shape, c = codes(heat);
    const cell = Math.max(1, Math.min(16, Math.floor(400 / cols), Math.floor(320 / rows)));
    canvas.width = cols * cell; canvas.height = rows * cell;
    const ctx = canvas.getContext("2d"), img = ctx.createImageData(canvas.width, canvas.height);
    const step = (heat.hi - heat.lo) / 250, base = group * rows * cols;
    for (let r = 0; r < rows; r++) for (let q = 0; q < cols; q++) {
      const code = c[base + r * cols + q];
      let rgb;
      const masked = code === 252 || (mask && mask[base + r * cols + q] === 252);
      if (masked) rgb = ((r + q) % 2) ? [200, 200, 200] : [150, 150, 150]; // hatched grey: blocked
      else if (code > 250) rgb = [255, 0, 255]; // NaN or +inf: loud
      else rgb = colour(heat.lo + code * step, heat.lo, heat.hi);
      for (let y = 0; y < cell; y++) for (let x = 0; x < cell; x++) {
        const o = 4 * ((r * cell + y) * canvas.width + q * cell + x);
        img.data[o] = rgb[0]; img.data[o + 1] = rgb[1]; img.data[o + 2] = rgb[2]; img.data[o + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
    canvas.onmousemove = (e) => {
      const rect = canvas.getBoundingClientRect();
      const q = Math.floor((e.clientX - rect.left) / rect.width * cols), r = Math.floor((e.clientY - rect.top) / rect.height * rows);
      const code = c[base + r * cols + q];
      const v = code === 251 ? "NaN" : code === 252 ? "−∞ (masked)" : code === 253 ? "+∞" : "≈ " + fmt(heat.lo + code * step);
      readout.textContent = "row " + r + ", column " + q + ": " + v;
    };
  }
  function tensorSection(title, i, entry) {
    const div = document.createElement("div");
    if (!entry) { div.innerHTML = "<h3>" + title + "</h3><p class='hint'>not recorded" + (title === "gradient" ? " (backward() has not reached it, or ran outside record_steps())" : "") + "</p>"; return div; }
    const s = entry.stats, h = entry.heat;
    div.innerHTML = "<h3>" + title + "</h3><div class='stats'>min " + fmt(s.min) + " · max " + fmt(s.max) + " · mean " + fmt(s.mean) +
      "<br>norm " + fmt(s.norm) + " · NaN " + s.nan + " · inf " + s.inf + " · of " + s.count + "</div>";
    if (!h) return div; // a node outside every picture keeps its statistics alone
    const heads = h.shape[0], ndim = NODES[i].shape.length;
    const pick = document.createElement("div");
    pick.className = "hint";
    let html = "showing " + esc(h.index) + (ndim >= 3 ? " (batch row 0)" : "") + ": " + h.shape[1] + " rows × " + h.shape[2] + " columns";
    if (heads > 1) {
      const isHead = ndim === 4 && NODES[i].shape[1] < NODES[i].shape[2]; // [B, H, T, ·]
      html += ' · <label>' + (isHead ? "head" : "index on axis " + (ndim - 3)) + ' <select>' +
        Array.from({ length: heads }, (_, g) => "<option value='" + g + "'>" + g + "</option>").join("") + "</select></label>";
    }
    pick.innerHTML = html;
    const canvas = document.createElement("canvas"); canvas.className = "heat";
    const readout = document.createElement("div"); readout.className = "hint"; readout.textContent = "point at a cell to read its value";
    const mask = maskOf(i, h);
    const draw = (g) => drawHeat(canvas, h, g, mask, readout);
    const sel = pick.querySelector("select");
    if (sel) sel.addEventListener("change", () => draw(+sel.value));
    div.append(pick, canvas, readout);
    draw(0);
    if (mask || codes(h).some((x) => x === 252)) div.append(Object.assign(document.createElement("div"), { className: "hint", textContent: "grey checks: positions the mask blocks (−∞ scores, zero weights)" }));
    return div;
  }
  function row(k, v) { return "<tr><td>" + k + "</td><td>" + v + "</td></tr>"; }
  function select(i) {
    state.selected = i;
    light();
    const n = NODES[i], p = $("panel");
    const f = n.formula !== undefined ? DATA.formulas[n.formula] : null;
    let html = "<h2>" + esc(nodeName(i)) + "</h2><table>" +
      row("node", "#" + i + " · " + esc(n.kind)) +
      row("module", esc(n.module || "(top level)")) +
      (n.role ? row("role", esc(n.role)) : "") +
      row("shape", '<span class="shape">' + esc(shape(n.shape)) + "</span>") +
      (n.dtype ? row("dtype", esc(n.dtype)) : "") +
      (Object.keys(n.saved).length ? row("saved for backward", Object.entries(n.saved).map(([k, v]) => esc(k) + " " + esc(shape(v))).join(", ")) : "") +
      (n.saved_bytes !== undefined ? row("saved bytes", count(n.saved_bytes, "B")) : "") +
      (n.flops !== undefined ? row("FLOPs", count(n.flops, "FLOP")) : "") +
      row("step", (i in FWD_RANK ? "<a class='node-link' data-step='" + FWD_RANK[i] + "'>forward " + (FWD_RANK[i] + 1) + "</a>" : "") +
        (i in BWD_RANK ? (i in FWD_RANK ? ", " : "") + "<a class='node-link' data-step='" + (DATA.forward.length + BWD_RANK[i]) + "'>backward " + (BWD_RANK[i] + 1) + "</a>" : "") +
        (i in FWD_RANK || i in BWD_RANK ? " <span class='hint'>(click: step there)</span>" : "")) +
      "</table>";
    if (f && (f[0] || f[1])) {
      html += "<h3>formulas (from the op's docstring)</h3>" +
        (f[0] ? "<div>forward</div><div class='formula'>" + esc(f[0]) + "</div>" : "") +
        (f[1] ? "<div>backward</div><div class='formula'>" + esc(f[1]) + "</div>" : "");
    }
    if (n.inputs.length) {
      html += "<h3>inputs, and the gradient sent back to each</h3>" + n.inputs.map((j, k) =>
        "<div><a class='node-link' data-node='" + j + "'>" + esc(nodeName(j)) + "</a> " + esc(shape(NODES[j].shape)) +
        " · ‖g‖ " + fmt(n.sent[k]) + "</div>").join("");
    }
    p.innerHTML = html;
    p.append(tensorSection("value", i, n.value), tensorSection("gradient", i, n.grad));
    p.querySelectorAll("a.node-link[data-node]").forEach((a) => a.addEventListener("click", () => select(+a.dataset.node)));
    p.querySelectorAll("a.node-link[data-step]").forEach((a) => a.addEventListener("click", () => go(+a.dataset.step)));
    curves(p);
  }
  function showModule(members) {
    const ops = members.filter((m) => NODES[m].kind === "op");
    const flops = ops.reduce((a, m) => a + (NODES[m].flops || 0), 0);
    const p = $("panel");
    p.innerHTML = "<h2>" + esc(DATA.views[state.view].title) + "</h2><p>" + ops.length + " ops" +
      (flops ? ", " + count(flops, "FLOP") : "") + ". Click a box for its details; the links at the top go back out.</p>";
    curves(p);
  }
  function intro() {
    const p = $("panel");
    p.innerHTML = "<h2>How to read this page</h2><p>Each box is one op the engine ran (white), a weight (green) or a module folded into one box (blue, 3-D). " +
      "Edges are as wide and red as the gradient that flowed back along them.</p><p><b>→</b> steps forward through the ops in the order they ran, then backward in the order backward() reached them. " +
      "Click a box for its formulas, statistics and heatmaps; click a 3-D module box to open it. Drag to pan, wheel to zoom, <b>F</b> to fit, <b>L</b> for lecture mode, <b>?</b> for all keys.</p>";
    curves(p);
  }

  // ---- gradient norms over training (train --explore) -------------------------------------
  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  function curves(p) {
    const c = DATA.curves;
    if (!c || !c.iter || !c.iter.length) return;
    const div = document.createElement("div");
    div.innerHTML = "<h3>gradient norm per module over training (log scale)</h3>";
    const canvas = document.createElement("canvas"); canvas.width = 400; canvas.height = 220; canvas.className = "curves";
    div.append(canvas);
    const names = Object.keys(c.modules), ctx = canvas.getContext("2d");
    const all = names.flatMap((m) => c.modules[m]).filter((v) => v > 0).map(Math.log10);
    const lo = Math.min(...all), hi = Math.max(...all), x0 = Math.min(...c.iter), x1 = Math.max(...c.iter);
    const X = (x) => 40 + 350 * (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5), Y = (v) => 200 - 180 * (hi > lo ? (Math.log10(v) - lo) / (hi - lo) : 0.5);
    ctx.font = "11px Helvetica"; ctx.fillStyle = "#444";
    ctx.fillText(fmt(Math.pow(10, hi)), 2, 24); ctx.fillText(fmt(Math.pow(10, lo)), 2, 200);
    ctx.fillText("iter " + x0, 40, 215); ctx.fillText("iter " + x1, 340, 215);
    names.forEach((m, k) => {
      ctx.strokeStyle = PALETTE[k % PALETTE.length]; ctx.beginPath();
      c.modules[m].forEach((v, t) => { if (v > 0) ctx[t ? "lineTo" : "moveTo"](X(c.iter[t]), Y(v)); });
      ctx.stroke();
    });
    const legend = document.createElement("div"); legend.className = "hint";
    legend.innerHTML = names.map((m, k) => "<span style='color:" + PALETTE[k % PALETTE.length] + "'>■</span> " + esc(m)).join(" &nbsp;");
    div.append(legend);
    p.append(div);
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
      if (box && want) centre(boxEls[box], LECTURE_SCALE); else readable(want ? LECTURE_SCALE : 0);
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
  document.body.dataset.ready = "1";
})();
