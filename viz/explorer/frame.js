// The graph as now on screen, saved for the slides: SVG (S) or PNG at twice the screen's pixels (P),
// with the step's caption on a band above the graph. Shares one scope with explorer.js (page.html).

function frameSvg() { // the graph as now on screen (this zoom, these lit boxes) as one SVG file
  const r = $("graph").getBoundingClientRect(), copy = svg.cloneNode(true), ns = "http://www.w3.org/2000/svg";
  copy.setAttribute("xmlns", ns);
  copy.setAttribute("width", Math.round(r.width)); copy.setAttribute("height", Math.round(r.height));
  const rules = [];
  for (const sheet of document.styleSheets) for (const rule of sheet.cssRules) if (/mt-|g\.node|g\.edge/.test(rule.selectorText || "")) rules.push(rule.cssText);
  const style = document.createElementNS(ns, "style"); style.textContent = rules.join("\n");
  const ground = document.createElementNS(ns, "rect");
  ["x", "y", "width", "height"].forEach((a, k) => ground.setAttribute(a, [vb.x, vb.y, vb.w, vb.h][k]));
  ground.setAttribute("fill", "#fff");
  copy.insertBefore(style, copy.firstChild); copy.insertBefore(ground, style.nextSibling);
  const words = DATA.title + " · " + $("step-text").textContent;
  const title = document.createElementNS(ns, "title");
  title.textContent = words;
  copy.insertBefore(title, copy.firstChild);
  // the caption a slide needs (which step this is), 18 px tall on screen, wrapped to the frame's width, on a white band
  // added above the graph: the frame keeps its size in pixels and the graph is drawn whole below the caption
  const unit = vb.w / r.width, size = 18 * unit, lines = wrap(words, Math.max(20, Math.floor(r.width / 9.5)));
  const bandH = size * (1.3 * lines.length + 0.6), top = vb.y - bandH;
  copy.setAttribute("viewBox", [vb.x, top, vb.w, vb.h + bandH].join(" "));
  copy.setAttribute("preserveAspectRatio", "xMidYMid meet");
  ground.setAttribute("y", top); ground.setAttribute("height", vb.h + bandH);
  const caption = document.createElementNS(ns, "text");
  [["x", vb.x + 8 * unit], ["y", top + size * 1.2], ["font-size", size], ["font-family", "sans-serif"], ["class", "mt-caption"]].forEach(([a, v]) => caption.setAttribute(a, v));
  lines.forEach((line, k) => {
    const span = document.createElementNS(ns, "tspan");
    span.setAttribute("x", vb.x + 8 * unit); span.setAttribute("dy", k ? size * 1.3 : 0);
    span.textContent = line;
    caption.appendChild(span);
  });
  const rule = document.createElementNS(ns, "line");
  [["x1", vb.x], ["x2", vb.x + vb.w], ["y1", vb.y], ["y2", vb.y], ["stroke", "#bbb"], ["stroke-width", unit]].forEach(([a, v]) => rule.setAttribute(a, v));
  copy.append(caption, rule);
  return new XMLSerializer().serializeToString(copy);
}
function wrap(text, width) { // lines of at most `width` characters, broken between words
  const lines = [];
  let line = "";
  text.split(/\s+/).forEach((w) => {
    if (line && (line + " " + w).length > width) { lines.push(line); line = w; } else line = line ? line + " " + w : w;
  });
  if (line) lines.push(line);
  return lines;
}
function download(name, blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob); a.download = name;
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}
function frameName(ext) { return "explorer-" + (state.step >= 0 ? stepName(state.step) : "start") + "." + ext; }
function saveSvg() { download(frameName("svg"), new Blob([frameSvg()], { type: "image/svg+xml" })); }
function savePng() { // the SVG drawn on a canvas at twice the screen's pixels: sharp on a projector
  const text = frameSvg(), img = new Image(), r = $("graph").getBoundingClientRect();
  img.onload = () => {
    const c = document.createElement("canvas");
    c.width = Math.round(r.width) * 2; c.height = Math.round(r.height) * 2;
    const ctx = c.getContext("2d"); ctx.scale(2, 2); ctx.drawImage(img, 0, 0);
    c.toBlob((blob) => download(frameName("png"), blob), "image/png");
  };
  img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(text);
}

