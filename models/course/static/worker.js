// The tiny GPT, off the page's thread: its own Pyodide trains it and posts each step's loss, then
// a sample; on request, viz.explore's page of one step of it, laid out by viz.js
// (models/course/runtime.py: train_tiny_gpt, sample_tiny_gpt, use_vizjs, explore_tiny_gpt).
let booted = null;

async function python(cfg, base) {
  if (!booted) {
    importScripts(new URL(cfg.indexURL + "pyodide.js", base).href,
                  new URL("boot.js", base).href);
    booted = bootPython(cfg, base);
  }
  return booted;
}

async function train(py, steps, seed) {
  self.postMessage({ type: "ready", timings: py.timings });
  const times = [];
  let last = performance.now();
  py.globals.set("report", (step, loss) => {
    const now = performance.now();
    times.push(now - last);
    last = now;
    self.postMessage({ type: "step", step, loss });
  });
  last = performance.now();
  const out = py.runPython(`
import json
model, tok, losses = runtime.train_tiny_gpt(${steps | 0}, seed=${seed | 0}, on_step=report)
json.dumps({"losses": losses, "sample": runtime.sample_tiny_gpt(model, tok, seed=${seed | 0})})
`);
  const sorted = times.slice().sort((a, b) => a - b);
  self.postMessage({ type: "done", ...JSON.parse(out),
                     stepMs: sorted[Math.floor(sorted.length / 2)] });
}

async function explore(py, cfg, base) {
  const t0 = performance.now();
  if (!self.Viz) importScripts(new URL(cfg.vizjs, base).href);
  const viz = await Viz.instance();
  py.globals.set("render_svg", (dot) => viz.renderString(dot, { format: "svg" }));
  const path = py.runPython(`
import os
runtime.use_vizjs(render_svg)
_page = "/home/pyodide/tiny_gpt_step.html"
if os.path.exists(_page):
    os.remove(_page)
str(runtime.explore_tiny_gpt(model, tok, _page))
`);
  const html = py.FS.readFile(path, { encoding: "utf8" });
  self.postMessage({ type: "explorer", html, ms: performance.now() - t0 });
}

self.onmessage = async (event) => {
  const { cfg, base, steps, seed, what } = event.data;
  try {
    const py = await python(cfg, base);
    if (what === "explore") await explore(py, cfg, base);
    else await train(py, steps, seed);
  } catch (error) {
    self.postMessage({ type: "error", message: String(error) });
  }
};
