// The course page: cells that run in Pyodide on this thread, their graphs (viz.js) and attention
// maps, the tiny GPT in a worker, the exercises. Hooks for automation (CONTRACT.md,
// `microtensor course`): window.microtensorReady, window.microtensorRun(code).
const CFG = JSON.parse(document.getElementById("course-config").textContent);
const BASE = document.baseURI;
const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = el("script", { src: new URL(src, BASE).href });
    s.onload = resolve;
    s.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(s);
  });
}

// while Python loads, the status line names the step and the seconds so far, and says why
// the Run buttons wait
const loadStart = performance.now();
let loadStep = "Pyodide's loader";
window.microtensorLoadLog = [];  // [{step, s: seconds since the page started}]
const loadTicker = setInterval(() => {
  $("status").textContent = `Loading ${loadStep}… ${((performance.now() - loadStart) / 1000)
    .toFixed(0)} s. Run is disabled until Python, numpy and microtensor are loaded ` +
    "(usually 7–30 s the first time, depending on the machine).";
}, 250);
window.microtensorReady = (async () => {
  try {
    await loadScript(CFG.indexURL + "pyodide.js");
    return await bootPython(CFG, BASE, (step) => {
      loadStep = step;
      window.microtensorLoadLog.push({ step, s: (performance.now() - loadStart) / 1000 });
    });
  } finally {
    clearInterval(loadTicker);
  }
})().then((py) => {
  const t = py.timings;
  $("status").textContent = `Ready: Pyodide ${py.version}, numpy and microtensor loaded in ` +
    `${(t.total / 1000).toFixed(1)} s (Pyodide ${(t.core / 1000).toFixed(1)} s, numpy ` +
    `${(t.numpy / 1000).toFixed(1)} s, microtensor ${(t.microtensor / 1000).toFixed(1)} s).`;
  $("status").classList.add("ready");
  window.microtensorTimings = t;
  return py;
});
window.microtensorReady.catch((error) => {
  $("status").textContent = `Python did not start: ${error}`;
  $("status").classList.add("failed");
});

// the printed text of `code` (stdout then stderr), run in a fresh namespace
window.microtensorRun = async (code) => {
  const result = await runCell(code, null);
  return result.text;
};

async function runCell(code, namespace) {
  const py = await window.microtensorReady;
  const ns = namespace || py.globals.get("dict")();
  const run = py.globals.get("runtime").run_cell;
  const json = py.pyimport("json");
  return JSON.parse(json.dumps(run(code, ns)));
}

// a light gutter of line numbers beside an editor: tracebacks name lines ("<cell>", line 7)
function withGutter(textarea) {
  textarea.wrap = "off";  // one line of code, one line of the gutter
  const gutter = el("pre", { className: "gutter", ariaHidden: "true" });
  const number = () => {
    const n = textarea.value.split("\n").length;
    gutter.textContent = Array.from({ length: n }, (_, i) => i + 1).join("\n");
    gutter.scrollTop = textarea.scrollTop;
  };
  textarea.addEventListener("input", number);
  textarea.addEventListener("scroll", () => { gutter.scrollTop = textarea.scrollTop; });
  textarea.renumber = number;
  number();
  return el("div", { className: "editor" }, gutter, textarea);
}

// ---- pictures ----------------------------------------------------------------------------
let vizInstance = null;
async function drawGraph(dot, into) {
  vizInstance = vizInstance || (await Viz.instance());
  const svg = vizInstance.renderSVGElement(dot);
  svg.classList.add("graph");
  const box = el("div", { className: "graph-box", title: "click: full size / fit the width" },
                 svg);
  box.onclick = () => box.classList.toggle("full");
  into.append(box);
}

// viridis, 5 stops, interpolated; exactly 0 (a blocked key) is grey, as viz.attention_heatmap
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
function colour(x) {
  if (x === 0) return "rgb(217,217,217)";
  const t = Math.min(Math.max(x, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(t), VIRIDIS.length - 2), f = t - i;
  const c = VIRIDIS[i].map((v, k) => Math.round(v + f * (VIRIDIS[i + 1][k] - v)));
  return `rgb(${c})`;
}

function drawHeatmap(map, into) {
  const NS = "http://www.w3.org/2000/svg";
  const heads = map.weights, cell = 26, pad = 34;
  const tq = heads[0].length, tk = heads[0][0].length;
  const w = heads.length * (tk * cell + pad) + pad, h = tq * cell + pad + 24;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.classList.add("heatmap");
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n);
  };
  const labels = map.labels.map((c) => (c === " " ? "␣" : c));
  heads.forEach((rows, head) => {
    const x0 = pad + head * (tk * cell + pad), y0 = pad;
    if (heads.length > 1) add("text", { x: x0, y: 14, class: "small" }, `head ${head}`);
    rows.forEach((row, i) => row.forEach((v, j) => {
      add("rect", { x: x0 + j * cell, y: y0 + i * cell, width: cell - 1, height: cell - 1,
                    fill: colour(v) }, undefined);
      svg.lastChild.append(Object.assign(document.createElementNS(NS, "title"),
                                         { textContent: `query ${i}, key ${j}: ${v}` }));
    }));
    labels.forEach((c, j) => add("text", { x: x0 + j * cell + cell / 2, y: y0 - 4,
                                           "text-anchor": "middle" }, c));
    labels.slice(labels.length - tq).forEach((c, i) =>
      add("text", { x: x0 - 6, y: y0 + i * cell + cell * 0.65, "text-anchor": "end" }, c));
  });
  into.append(el("div", { className: "heatmap-box" }, el("div", { className: "caption" },
    map.title), svg));
}

// ---- the cells ---------------------------------------------------------------------------
function addSection(section) {
  const code = el("textarea", { className: "code", spellcheck: false, value: section.code,
                                rows: section.code.split("\n").length });
  const button = el("button", { textContent: "Run", disabled: true,
                                title: "waits until Python is loaded (the status line above)" });
  const reset = el("button", { textContent: "Reset", className: "secondary" });
  const output = el("pre", { className: "output" });
  const pictures = el("div", { className: "pictures" });
  const timing = el("span", { className: "status" });
  const card = el("section", { className: "card", id: `s-${section.id}` },
    el("h2", { textContent: section.title }), el("p", { className: "note",
      textContent: section.note }), withGutter(code), el("div", { className: "row" }, button, reset, timing),
    output, pictures);
  card.dataset.section = section.id;
  const namespace = { current: null };
  button.onclick = async () => {
    button.disabled = true;
    card.classList.add("running");
    card.dataset.running = "";
    delete card.dataset.done;
    output.classList.remove("error");
    output.textContent = "running… (the page waits until the cell ends: it runs on this thread)";
    pictures.replaceChildren();
    const py = await window.microtensorReady;
    namespace.current = namespace.current || py.globals.get("dict")();
    // let "running…" paint before Python holds the thread: a frame, then a task after it
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const t0 = performance.now();
    const result = await runCell(code.value, namespace.current);
    const ms = performance.now() - t0;
    timing.textContent = `${ms.toFixed(0)} ms`;
    card.dataset.ms = ms.toFixed(1);
    output.textContent = result.text || "(nothing printed)";
    output.classList.toggle("error", !result.ok);
    for (const dot of result.graphs) await drawGraph(dot, pictures);
    for (const map of result.heatmaps) drawHeatmap(map, pictures);
    card.classList.remove("running");
    delete card.dataset.running;
    card.dataset.done = result.ok ? "ok" : "error";
    button.disabled = false;
  };
  reset.onclick = () => { code.value = section.code; code.renumber(); };
  $("sections").append(card);
  $("toc").append(el("a", { href: `#s-${section.id}`, textContent: section.id === "readme"
    ? "README" : section.id }));
  return button;
}

const runButtons = CFG.sections.map(addSection);
$("toc").append(el("a", { href: "#tiny-gpt", textContent: "tiny GPT" }),
                el("a", { href: "#exercises", textContent: "exercises" }));

// ---- the tiny GPT, in a worker -----------------------------------------------------------
let worker = null;
$("gpt-text").querySelector("pre").textContent = CFG.tinyText;
$("gpt-text-size").textContent = CFG.tinyText.length;
function drawCurve(losses, steps) {
  const canvas = $("gpt-curve"), g = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, pad = 36;
  g.clearRect(0, 0, W, H);
  g.strokeStyle = "#999";
  g.strokeRect(pad, 8, W - pad - 8, H - pad - 8);
  if (!losses.length) return;
  const hi = Math.max(...losses), lo = Math.max(0, Math.min(...losses) - 0.1 * (hi - Math.min(...losses)));
  const n = Math.max(losses.length - 1, 1);
  g.fillStyle = "#333";
  g.font = "11px sans-serif";
  g.fillText(hi.toFixed(2), 2, 14);
  g.fillText(lo.toFixed(2), 2, H - pad);
  g.fillText("0", pad, H - pad + 14);
  g.fillText(String(Math.max(steps - 1, n)), W - 30, H - pad + 14);
  g.fillText("step", W / 2, H - 10);
  g.save();
  g.translate(12, H / 2);
  g.rotate(-Math.PI / 2);
  g.fillText("loss", -10, 0);
  g.restore();
  g.strokeStyle = "#1f77b4";
  g.beginPath();
  losses.forEach((v, i) => {
    const x = pad + (i / Math.max(steps - 1, n)) * (W - pad - 8);
    const y = 8 + (1 - (v - lo) / (hi - lo || 1)) * (H - pad - 16);
    i ? g.lineTo(x, y) : g.moveTo(x, y);
  });
  g.stroke();
}

// train in the worker; resolves {losses, sample, stepMs} (also a hook for the tests)
window.microtensorTrainTinyGPT = (steps, seed) => new Promise((resolve, reject) => {
  worker = worker || new Worker(new URL("worker.js", BASE).href);
  const losses = [];
  $("gpt-sample").textContent = "";
  $("gpt-status").textContent = "starting Python in the worker…";
  worker.onmessage = (event) => {
    const m = event.data;
    if (m.type === "ready") $("gpt-status").textContent = "training…";
    if (m.type === "step") {
      losses.push(m.loss);
      drawCurve(losses, steps);
      $("gpt-status").textContent = `step ${m.step + 1}/${steps}: loss ${m.loss.toFixed(4)}`;
    }
    if (m.type === "done") {
      $("gpt-explore").disabled = false;
      $("gpt-status").textContent = `done: loss ${losses[0].toFixed(4)} → ` +
        `${losses[losses.length - 1].toFixed(4)}, ${m.stepMs.toFixed(0)} ms a step`;
      $("gpt-sample").textContent = m.sample;
      resolve(m);
    }
    if (m.type === "error") {
      $("gpt-status").textContent = m.message;
      reject(new Error(m.message));
    }
  };
  worker.postMessage({ cfg: CFG, base: BASE, steps, seed, what: "train" });
});

// viz.explore's page of one training step of the model the worker trained; resolves
// {html, ms} and opens it in a new tab (a Blob address: nothing leaves the browser)
window.microtensorExploreTinyGPT = () => new Promise((resolve, reject) => {
  if (!worker) {
    reject(new Error("train the tiny GPT first"));
    return;
  }
  $("gpt-status").textContent = "writing the explorer's page (viz.explore, laid out by viz.js)…";
  worker.onmessage = (event) => {
    const m = event.data;
    if (m.type === "explorer") {
      const address = URL.createObjectURL(new Blob([m.html], { type: "text/html" }));
      $("gpt-explorer-link").href = address;
      $("gpt-explorer-link").hidden = false;
      $("gpt-status").textContent = `explorer ready in ${(m.ms / 1000).toFixed(1)} s`;
      resolve(m);
    }
    if (m.type === "error") {
      $("gpt-status").textContent = m.message;
      reject(new Error(m.message));
    }
  };
  worker.postMessage({ cfg: CFG, base: BASE, what: "explore" });
});

$("gpt-explore").onclick = async () => {
  $("gpt-explore").disabled = true;
  try {
    await window.microtensorExploreTinyGPT();
    window.open($("gpt-explorer-link").href, "_blank");
  } finally {
    $("gpt-explore").disabled = false;
  }
};

$("gpt-train").onclick = async () => {
  $("gpt-train").disabled = true;
  try {
    await window.microtensorTrainTinyGPT(Number($("gpt-steps").value), Number($("gpt-seed").value));
  } finally {
    $("gpt-train").disabled = false;
  }
};

// ---- the exercises -----------------------------------------------------------------------
let exercises = [];
{
  const editor = $("ex-code"), holder = el("div");
  editor.replaceWith(holder);
  holder.replaceWith(withGutter(editor));
}
async function setupExercises(py) {
  exercises = JSON.parse(py.runPython("import json; json.dumps(runtime.exercise_list())"));
  for (const e of exercises) {
    $("ex-pick").append(el("option", { value: e.number,
      textContent: `${e.number}. ${e.title} (${e.section})` }));
  }
  const hintBox = $("ex-hint");
  const show = () => {
    const e = exercises.find((x) => x.number === Number($("ex-pick").value));
    const editor = $("ex-code");
    editor.value = e.stub;
    editor.renumber();
    $("ex-output").textContent = "";
    hintBox.querySelector("pre").textContent = e.hint || "(no hint for this one)";
    hintBox.open = false;
    // open on the function to write: its `def` line at the top, the caret in its body
    const at = e.function ? e.stub.indexOf(`def ${e.function}(`) : -1;
    if (at >= 0) {
      const line = e.stub.slice(0, at).split("\n").length - 1;
      const lineHeight = parseFloat(getComputedStyle(editor).lineHeight) || 18;
      const body = e.stub.indexOf("raise NotImplementedError", at);
      if (body >= 0) editor.setSelectionRange(body, body);
      editor.scrollTop = line * lineHeight;
    }
  };
  $("ex-pick").onchange = show;
  $("ex-reset").onclick = show;
  $("ex-check").onclick = async () => {
    $("ex-output").textContent = "checking…";
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const check = py.globals.get("runtime").check_exercise;
    const result = JSON.parse(py.pyimport("json").dumps(
      check(Number($("ex-pick").value), $("ex-code").value)));
    $("ex-output").textContent = result.text;
    // the hint once, in the Hint box: the one for the mistake the checks recognised
    const e = exercises.find((x) => x.number === Number($("ex-pick").value));
    hintBox.querySelector("pre").textContent = result.hint || e.hint || "(no hint for this one)";
    hintBox.open = Boolean(result.hint);
    $("exercises").dataset.checked = result.results.filter((r) => r.status === "passed").length;
  };
  show();
  for (const id of ["ex-pick", "ex-check", "ex-reset"]) $(id).disabled = false;
}

window.microtensorReady.then(async (py) => {
  runButtons.forEach((b) => { b.disabled = false; b.title = ""; });
  $("gpt-train").disabled = false;
  await setupExercises(py);
});
