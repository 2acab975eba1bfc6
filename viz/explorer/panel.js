// The explorer's panel: numbers as the pictures print them, one node's table, formulas,
// statistics and heatmaps (a canvas, one byte per cell as viz/compact.py stores them), and the
// gradient-norm curves of `train --explore`. Shares one scope with explorer.js (page.html).

// ---- numbers -------------------------------------------------------------------------
function scalar(x) { // a scalar (the loss) as the page's title writes it: 3 decimals, fmt's powers of ten outside 1e-3..1e3
  return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e3 ? x.toFixed(3) : fmt(x);
}
function num(x) { return "<span class='num'>" + fmt(x) + "</span>"; } // a number the line never breaks (3.23e-5 at its hyphen)
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
  if (n.kind === "op") return n.op + (n.op === "pow" && n.consts && n.consts.length ? " ^" + fmt(n.consts[n.consts.length - 1]) : "") + (n.role ? " (" + n.role + ")" : "");
  return n.name || n.kind;
}
function where(i) { return NODES[i].module ? " in " + NODES[i].module : ""; }
function inputName(i, k) { // input k of node i as a step's text names it: a residual's skip and branch, and two inputs of one name told apart by module
  const n = NODES[i], j = n.inputs[k], name = nodeName(j);
  const twin = n.inputs.some((m, q) => q !== k && nodeName(m) === name && NODES[m].module !== NODES[j].module);
  const own = name + (twin && NODES[j].module ? " in " + NODES[j].module : "");
  if (n.role !== "residual") return own;
  return (k === 0 ? "the skip x (" : "the branch F(x) (") + own + (!twin && NODES[j].module && NODES[j].module !== n.module ? where(j) : "") + ")";
}
function broadcastAxes(small, big) { // the axes of `big` that an input of shape `small` was copied along
  const out = [], lead = big.length - small.length;
  big.forEach((d, a) => { if (a < lead || (small[a - lead] === 1 && d > 1)) out.push(a); });
  return out;
}
const ELEMENTWISE = ["add", "sub", "mul", "div", "maximum", "minimum", "where"]; // ops that broadcast their inputs
function broadcastNote(i, k) { // "" unless input k was broadcast: its gradient is g summed over the copies
  const n = NODES[i], j = n.inputs[k];
  if (n.kind !== "op" || !NODES[j].shape || NODES[j].shape.length === n.shape.length && NODES[j].shape.every((d, a) => d === n.shape[a])) return "";
  const small = NODES[j].shape, lead = n.shape.length - small.length;
  if (ELEMENTWISE.indexOf(n.op) < 0 || lead < 0 || small.some((d, a) => d !== 1 && d !== n.shape[a + lead])) return ""; // not a broadcast (matmul, reshape...)
  const axes = broadcastAxes(small, n.shape);
  if (!axes.length || axes.length === n.shape.length) return "";
  const BT = batchShape(), rows = axes.length === 1 && axes[0] === 0 && n.shape[0] === BT.B;
  const positions = axes.length === 2 && axes[0] === 0 && axes[1] === 1 && n.shape[0] === BT.B && n.shape[1] === BT.T;
  const plain = n.op === "add" || n.op === "sub"; // ∂L/∂b = g (or −g) copied back: a sum of g itself
  return inputName(i, k) + " " + shape(NODES[j].shape) + " was broadcast to " + shape(n.shape) + ", copied " +
    (rows ? "for each of the batch's " + BT.B + " rows" : positions ? "for each of the batch's " + BT.B + " × " + BT.T + " positions"
      : "along axis " + axes.join(", ")) + ": its gradient is " + (plain ? "g " : "") + "summed over " +
    (rows ? "the batch" : positions ? "them" : "those axes") + (plain ? ", so its ‖g‖ can exceed ‖∂L/∂y‖" : "");
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
function maskOf(i, heat) { // −inf scores of an input (or of the masked_fill after it) of the same slice: the masked positions
  const after = NODES.findIndex((n) => n.op === "masked_fill" && n.inputs[0] === i); // S's (and ∂L/∂S's) blocked cells: where it wrote −inf
  for (const j of NODES[i].inputs.concat(after >= 0 ? [after] : [])) {
    const h = NODES[j].value && NODES[j].value.heat;
    if (h && h.shape.join() === heat.shape.join()) {
      const c = codes(h);
      if (c.some((x) => x === 252)) return c;
    }
  }
  return null;
}
function scaleOf(heat, mask, group) { // the colour scale: the finite cells the mask does not block (of one head if `group` is given)
  const c = codes(heat), step = (heat.hi - heat.lo) / 250, size = heat.shape[1] * heat.shape[2];
  const from = group === undefined ? 0 : group * size, to = group === undefined ? c.length : from + size;
  let lo = Infinity, hi = -Infinity, mlo = Infinity, mhi = -Infinity;
  for (let k = from; k < to; k++) {
    if (c[k] > 250) continue;
    const v = heat.lo + c[k] * step;
    if (mask && mask[k] === 252) { mlo = Math.min(mlo, v); mhi = Math.max(mhi, v); } else { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  }
  if (lo > hi) { lo = heat.lo; hi = heat.hi; }
  return { lo: lo, hi: hi, masked: mlo <= mhi ? { lo: mlo, hi: mhi } : null, half: step / 2 };
}
function heatSize(rows, cols) { // screen size: as wide as the panel allows, a strip stretched taller
  const p = $("panel"), avail = Math.max(120, p.clientWidth - 30), tall = Math.max(160, p.clientHeight * 0.6);
  const lecture = document.body.classList.contains("lecture"); // for a room: as large as the panel allows
  let w = lecture ? avail : Math.min(avail, cols * 32), cell = w / cols;
  // square cells that fit the panel's height; in lecture mode the panel's width wins (cells grow taller or flatter)
  if (!lecture && rows * cell > tall) { w = Math.max(Math.min(w, tall * cols / rows), Math.min(w, 160)); cell = w / cols; }
  const h = Math.min(tall, Math.max(rows * cell, Math.min(rows * cell * 4, avail * 0.4, rows * (lecture ? 64 : 32))));
  return { w: w, h: h, kx: Math.max(1, Math.min(16, Math.round(cell))), ky: Math.max(1, Math.min(16, Math.round(h / rows))) };
}
function rowMax(heat, group, mask, r) { // the largest visible value of one row of one head (per-row colours)
  const [, rows, cols] = heat.shape, c = codes(heat), step = (heat.hi - heat.lo) / 250, base = group * rows * cols + r * cols;
  let hi = 0;
  for (let q = 0; q < cols; q++) {
    const code = c[base + q];
    if (code <= 250 && !(mask && mask[base + q] === 252)) hi = Math.max(hi, heat.lo + code * step);
  }
  return hi;
}
const tip = document.createElement("div"); // the hover readout beside the pointer: on screen whatever row it points at
tip.id = "tip"; tip.hidden = true;
document.body.append(tip);
function drawHeat(canvas, heat, group, mask, scale, readout, rowName, colName) {
  const [, rows, cols] = heat.shape, c = codes(heat), size = heatSize(rows, cols);
  canvas.width = cols * size.kx; canvas.height = rows * size.ky;
  canvas.style.width = size.w + "px"; canvas.style.height = size.h + "px";
  const ctx = canvas.getContext("2d"), img = ctx.createImageData(canvas.width, canvas.height);
  const step = (heat.hi - heat.lo) / 250, base = group * rows * cols, tops = {};
  for (let r = 0; r < rows; r++) for (let q = 0; q < cols; q++) {
    const code = c[base + r * cols + q];
    let rgb;
    const masked = code === 252 || (mask && mask[base + r * cols + q] === 252);
    if (code === 252) rgb = null; // −∞: no colour exists, grey checks
    else if (code > 250) rgb = [255, 0, 255]; // NaN or +inf: loud
    else rgb = colour(heat.lo + code * step, scale.lo, scale.rows ? (r in tops ? tops[r] : (tops[r] = rowMax(heat, group, mask, r))) : scale.hi);
    for (let y = 0; y < size.ky; y++) for (let x = 0; x < size.kx; x++) {
      const X = q * size.kx + x, Y = r * size.ky + y, o = 4 * (Y * canvas.width + X);
      let px = rgb || (((r + q) % 2) ? [200, 200, 200] : [150, 150, 150]);
      if (masked && rgb && (X + Y) % 5 === 0) px = [90, 90, 90]; // hatched: blocked, true colour between
      img.data[o] = px[0]; img.data[o + 1] = px[1]; img.data[o + 2] = px[2]; img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  canvas.onmousemove = (e) => {
    const rect = canvas.getBoundingClientRect();
    const q = Math.min(cols - 1, Math.floor((e.clientX - rect.left) / rect.width * cols)), r = Math.min(rows - 1, Math.floor((e.clientY - rect.top) / rect.height * rows));
    const code = c[base + r * cols + q], blocked = mask && mask[base + r * cols + q] === 252;
    const v = code === 251 ? "NaN" : code === 252 ? "−∞ (masked)" : code === 253 ? "+∞" : "≈ " + fmt(heat.lo + code * step) + (blocked ? " (masked position)" : "") +
      (scale.rows && !blocked ? " (row's largest ≈ " + fmt(rowMax(heat, group, mask, r)) + ")" : "");
    readout.textContent = (rowName ? rowName.split(" (")[0] + " " + r + ", " : "") + colName.split(" (")[0] + " " + q + ": " + v;
    tip.textContent = readout.textContent; tip.hidden = false; // beside the pointer, kept inside the window
    const w = tip.offsetWidth, h = tip.offsetHeight;
    tip.style.left = Math.max(4, Math.min(innerWidth - w - 4, e.clientX - w - 16)) + "px";
    tip.style.top = Math.max(4, Math.min(innerHeight - h - 4, e.clientY + 18)) + "px";
  };
  canvas.onmouseleave = () => { readout.textContent = "point at a cell to read its value"; tip.hidden = true; };
}
function colourKey(scale) { // a bar from one end of the scale to the other, with its numbers
  const key = document.createElement("div"), m = Math.max(-scale.lo, scale.hi);
  key.className = "colour-key";
  if (scale.rows) { key.rows = true; scale = { lo: 0, hi: 1 }; }
  const seq = scale.lo >= 0, stops = [0, 0.25, 0.5, 0.75, 1].map((t) => {
    const v = seq ? t * scale.hi : (2 * t - 1) * m, rgb = colour(v, scale.lo, scale.hi).map(Math.round);
    return "rgb(" + rgb.join(",") + ") " + (100 * t) + "%";
  });
  key.innerHTML = "<span>" + (seq ? "0" : "−" + fmt(m)) + "</span><span class='bar' style='background:linear-gradient(to right," + stops.join(",") +
    ")'></span><span>" + (key.rows ? "the row's largest" : seq ? fmt(scale.hi) : "+" + fmt(m)) + "</span>";
  return key;
}
const SCORES = ["QKᵀ", "S", "S + M", "S (masked)", "A"]; // attention's [B, H, T_q, T_k] steps
function batchShape() { // B and T: the first op output of 3 or more dims is [B, T, ...]
  const n = DATA.forward.map((i) => NODES[i]).find((m) => m.shape.length >= 3);
  return n ? { B: n.shape[0], T: n.shape[1] } : { B: 0, T: 0 };
}
function axisNames(i, heat) { // what a heatmap's rows and columns are, in the field's words
  const n = NODES[i], s = n.shape, nd = s.length, [, rows, cols] = heat.shape, BT = batchShape();
  const span = (k) => " (0–" + (k - 1) + ")";
  if (n.kind !== "op") { // a weight: named by the op that reads it
    const readers = NODES.filter((m) => m.inputs.indexOf(i) >= 0), reader = readers[0];
    // a tied table (GPT's wte) is read by the embedding and by the head: the embedding names it
    if (readers.some((m) => m.op === "embedding")) return ["token id" + span(rows), "feature" + span(cols)];
    if (reader && reader.op === "matmul" && reader.inputs[1] === i && nd === 2) return ["input feature" + span(rows), "output feature" + span(cols)];
    return nd < 2 ? ["", "feature" + span(cols)] : ["axis " + (nd - 2) + span(rows), "axis " + (nd - 1) + span(cols)];
  }
  if (SCORES.indexOf(n.role) >= 0) return ["query position t" + span(rows), "key position s" + span(cols)];
  const positions = nd >= 3 ? s[nd - 2] === BT.T : nd === 2 && s[0] === BT.B * BT.T && rows === BT.T;
  if (nd < 2) return ["", "element" + span(cols)];
  if (positions) return ["position t" + span(rows), (n.role === "Z" ? "feature of the head" : "feature") + span(cols)];
  if (nd >= 3 && s[nd - 1] === BT.T) return ["feature" + span(rows), "position t" + span(cols)]; // Kᵀ
  return ["axis " + (nd - 2) + span(rows), "axis " + (nd - 1) + span(cols)];
}
function tensorSection(title, i, entry) {
  const div = document.createElement("div"), n = NODES[i];
  if (!entry) {
    const why = n.kind === "const" ? (title === "gradient" ? "none: this input needs no gradient (requires_grad=False), so backward() computes none"
      : "not recorded (it was not read inside record_steps())")
      : "not recorded" + (title === "gradient" ? " (backward() has not reached it, or ran outside record_steps())" : "");
    div.innerHTML = "<h3>" + title + "</h3><p class='hint'>" + why + "</p>";
    return div;
  }
  const s = entry.stats, h = entry.heat;
  if (s.count === 1) { // a scalar (the loss): the number is the whole story, no 1 × 1 heatmap
    div.innerHTML = "<h3>" + title + "</h3><div class='stats'>= " + (s.nan ? "NaN" : s.inf ? "±∞" : scalar(s.min)) + "</div>";
    return div;
  }
  const mask = h ? maskOf(i, h) : null, hasMask = !!h && (!!mask || codes(h).some((x) => x === 252));
  div.innerHTML = "<h3>" + title + "</h3><div class='stats'>min " + fmt(s.min) + " · max " + fmt(s.max) + " · mean " + fmt(s.mean) +
    "<br>norm " + fmt(s.norm) + " · NaN " + s.nan + " · inf " + s.inf + " · of " + s.count + " <span class='hint'>(whole tensor" +
    (hasMask ? ", masked positions included" : "") + ")</span></div>";
  if (!h) return div; // a node outside every picture keeps its statistics alone
  const scale = scaleOf(h, mask);
  // attention weights (a softmax's rows, each summing to 1): each row coloured to its own largest weight, so a room
  // sees where every query looks (on one 0–1 scale all but the first rows are pale)
  scale.rows = title === "value" && n.op === "softmax" && scale.lo >= 0;
  const heads = h.shape[0], ndim = n.shape.length, isHead = ndim === 4 && n.shape[1] < n.shape[2]; // [B, H, T, ·]
  const which = heads > 1 ? (isHead ? "head" : "index") : "";
  const visible = document.createElement("span"); visible.className = "visible";
  if (mask) div.querySelector(".stats").append(document.createElement("br"), visible);
  const pick = document.createElement("div");
  pick.className = "hint";
  let html = "showing " + esc(h.index) + (ndim >= 3 ? " (batch row 0)" : "") + ": " + h.shape[1] + " rows × " + h.shape[2] + " columns";
  if (heads > 1) {
    html += ' · <label>' + (isHead ? "head" : "index on axis " + (ndim - 3)) + ' <select class="head">' +
      Array.from({ length: heads }, (_, g) => "<option value='" + g + "'>" + g + "</option>").join("") + "</select></label> <span class='hint'>(H)</span>";
  }
  const [rowName, colName] = axisNames(i, h);
  html += "<br>" + (rowName ? "rows: <b>" + esc(rowName) + "</b> · " : "") + "columns: <b>" + esc(colName) + "</b>";
  pick.innerHTML = html;
  const canvas = document.createElement("canvas"); canvas.className = "heat";
  const readout = document.createElement("div"); readout.className = "hint readout";
  readout.textContent = "point at a cell to read its value";
  const key = colourKey(scale);
  const what = document.createElement("div"); what.className = "hint";
  const all = heads > 1 ? " of the " + heads + " " + (isHead ? "heads" : "slices") + " kept (one scale for all, so they compare)" : "";
  what.textContent = scale.rows ? "per row: each row (one query's weights over the keys, summing to 1) goes from white 0 to purple at its own largest weight" +
      (mask ? "; masked cells are 0" : "") + "; colours quantized: one-byte codes in steps of " + fmt((h.hi - h.lo) / 250) + " (weights closer than that share a colour)"
    : (scale.lo >= 0 ? "white 0 → purple: the largest" : "blue negative · white 0 · red positive") +
      (mask ? "; the colours scale to the visible (unmasked) cells" + all + ", masked values beyond them take the end colour" : "; the colours scale to this slice" + all);
  const note = document.createElement("div"); note.className = "hint mask-note";
  const draw = (g) => {
    drawHeat(canvas, h, g, mask, scale, readout, rowName, colName);
    const hs = scaleOf(h, mask, g), at = which ? " of " + which + " " + g : ""; // the statistics of what is shown: this head
    // read back from one-byte codes: within half a code step of the true value, so marked ≈
    visible.innerHTML = "visible cells" + at + " (the heatmap): min ≈ " + num(hs.lo) + " · max ≈ " + num(hs.hi) +
      (hs.masked ? " <span class='hint'>· masked: ≈ " + num(hs.masked.lo) + (hs.masked.hi > hs.masked.lo ? " … " + num(hs.masked.hi) : "") + "</span>" : "") +
      " <span class='hint'>(one-byte codes: <span class='num'>± " + fmt(hs.half) + "</span>)</span>";
    if (!hasMask) return;
    let text = mask ? "hatched: positions the mask blocks, drawn in their true colour" : "grey checks: positions the mask blocks (−∞ scores)";
    if (mask && title === "gradient" && hs.masked && Math.max(-hs.masked.lo, hs.masked.hi) > hs.half) {
      text += ". ∂L/∂" + (n.role || "y") + " is not zero there (" + (which ? which + " " + g + ": " : "") + "up to ≈ " + fmt(Math.max(-hs.masked.lo, hs.masked.hi)) + "): the op after it sends a gradient to every cell." +
        (n.op === "softmax" ? " It is softmax's backward that cancels it: ∂L/∂s = a ⊙ (∂L/∂a − Σ a ⊙ ∂L/∂a) and a = 0 there, so ∂L/∂S is exactly 0 at the masked cells (its heatmap, the next backward step)." : "");
    } else if (mask && title === "value" && n.op === "softmax") text += " (zero weights: exp(−∞) = 0)";
    else if (mask && title === "gradient") text += " (zero there)";
    note.textContent = text;
  };
  const sel = pick.querySelector("select");
  if (sel) sel.addEventListener("change", () => { draw(+sel.value); sel.blur(); });
  div.append(pick, canvas, key, what, readout);
  if (hasMask) div.append(note);
  draw(0);
  return div;
}
function row(k, v) { return "<tr><td>" + k + "</td><td>" + v + "</td></tr>"; }
function select(i) {
  state.selected = i;
  tip.hidden = true; // the heatmap it read is redrawn
  light();
  const n = NODES[i], p = $("panel");
  const f = n.formula !== undefined ? DATA.formulas[n.formula] : null;
  let html = "<h2>" + esc(nodeName(i)) + "</h2><table>" +
    row("node", "#" + i + " · " + esc(n.kind)) +
    row("module", esc(n.module || "(top level)")) +
    (n.role ? row("role", esc(n.role)) : "") +
    row("shape", '<span class="shape">' + esc(shape(n.shape)) + "</span>") +
    (n.dtype ? row("dtype", esc(n.dtype)) : "") +
    (n.op === "pow" && (n.consts || []).length ? row("exponent", "p = " + fmt(n.consts[n.consts.length - 1])) : "") +
    (n.kind === "const" ? row("requires grad", "no: an input the graph reads, not a weight; backward() sends it nothing") : "") +
    (Object.keys(n.saved).length ? row("saved for backward", Object.entries(n.saved).map(([k, v]) => esc(k) + " " + esc(shape(v))).join(", ")) : "") +
    (n.saved_bytes !== undefined ? row("saved bytes", count(n.saved_bytes, "B")) : "") +
    (n.flops !== undefined ? row("FLOPs", count(n.flops, "FLOP")) : "") +
    (!(i in FWD_RANK || i in BWD_RANK) ? "" : row("step", (i in FWD_RANK ? "<a class='node-link' data-step='" + FWD_RANK[i] + "'>forward " + (FWD_RANK[i] + 1) + "</a>" : "") +
      (i in BWD_RANK ? (i in FWD_RANK ? ", " : "") + "<a class='node-link' data-step='" + (DATA.forward.length + BWD_RANK[i]) + "'>backward " + (BWD_RANK[i] + 1) + "</a>" : "") +
      " <span class='hint'>(click: step there)</span>")) +
    "</table>";
  if (f && (f[0] || f[1])) {
    html += "<h3>formulas (from the op's docstring)</h3>" +
      (f[0] ? "<div>forward</div><div class='formula'>" + esc(f[0]) + "</div>" : "") +
      (f[1] ? "<div>backward</div><div class='formula'>" + esc(f[1]) + "</div>" : "");
  }
  if (n.inputs.length) {
    html += "<h3>inputs, and the gradient sent back to each</h3>" + n.inputs.map((j, k) =>
      "<div><a class='node-link' data-node='" + j + "'>" + esc(inputName(i, k)) + "</a> " + esc(shape(NODES[j].shape)) +
      " · ‖g‖ " + fmt(n.sent[k]) + (broadcastNote(i, k) ? "<div class='hint broadcast'>" + esc(broadcastNote(i, k)) + "</div>" : "") + "</div>").join("");
  }
  p.innerHTML = html;
  const grad = tensorSection("gradient", i, n.grad);
  grad.classList.add("grad-section");
  p.append(tensorSection("value", i, n.value), grad);
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
    "Edges are as wide and red as the gradient that flowed back along them.</p><p>The page is a snapshot of one whole step: the ‖g‖ in each box and the edges' width and colour come from the backward pass, and are shown from the start, also while you step through the forward pass.</p><p><b>→</b> steps forward through the ops in the order they ran, then backward in the order backward() reached them. " +
    "Click a box for its formulas, statistics and heatmaps; click a 3-D module box to open it. Drag or wheel to scroll, Ctrl+wheel to zoom, <b>F</b> to fit, <b>/</b> to jump to a node or a step, <b>L</b> for lecture mode, <b>?</b> for all keys and the mouse. The address keeps the step: a reload comes back to it.</p>";
  curves(p);
}

// ---- gradient norms over training (train --explore) -------------------------------------
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
function curves(p) {
  const c = DATA.curves;
  if (!c || !c.iter || !c.iter.length) return;
  const div = document.createElement("div");
  div.innerHTML = "<h3>gradient norm ‖∂L/∂θ‖ per module over training (log scale)</h3>";
  const canvas = document.createElement("canvas"); canvas.width = 400; canvas.height = 220; canvas.className = "curves";
  div.append(canvas);
  const names = Object.keys(c.modules), ctx = canvas.getContext("2d");
  const all = names.flatMap((m) => c.modules[m]).filter((v) => v > 0).map(Math.log10);
  const lo = Math.min(...all), hi = Math.max(...all), x0 = Math.min(...c.iter), x1 = Math.max(...c.iter);
  const X = (x) => 40 + 350 * (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5), Y = (v) => 200 - 180 * (hi > lo ? (Math.log10(v) - lo) / (hi - lo) : 0.5);
  ctx.font = "11px Helvetica"; ctx.fillStyle = "#444";
  ctx.fillText(fmt(Math.pow(10, hi)), 2, 24); ctx.fillText(fmt(Math.pow(10, lo)), 2, 200);
  ctx.fillText("iter " + x0, 40, 215); if (x1 > x0) ctx.fillText("iter " + x1, 340, 215);
  names.forEach((m, k) => { // a line, and a dot at each evaluation (one evaluation: dots alone)
    ctx.strokeStyle = ctx.fillStyle = PALETTE[k % PALETTE.length]; ctx.beginPath();
    let pen = false;
    c.modules[m].forEach((v, t) => { if (v > 0) { ctx[pen ? "lineTo" : "moveTo"](X(c.iter[t]), Y(v)); pen = true; } });
    ctx.stroke();
    c.modules[m].forEach((v, t) => { if (v > 0) { ctx.beginPath(); ctx.arc(X(c.iter[t]), Y(v), 3, 0, 2 * Math.PI); ctx.fill(); } });
  });
  const legend = document.createElement("div"); legend.className = "hint";
  legend.innerHTML = names.map((m, k) => "<span style='color:" + PALETTE[k % PALETTE.length] + "'>■</span> " + esc(m)).join(" &nbsp;");
  div.append(legend);
  if (c.iter.length === 1) div.append(Object.assign(document.createElement("div"), { className: "hint", textContent: "one evaluation so far: reload the page after the next one to see the curves grow" }));
  p.append(div);
}
