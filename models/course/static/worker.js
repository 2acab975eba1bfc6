// The tiny GPT's training run, off the page's thread: its own Pyodide, posts each step's loss,
// then a sample (models/course/runtime.py, train_tiny_gpt and sample_tiny_gpt).
let booted = null;
self.onmessage = async (event) => {
  const { cfg, base, steps, seed } = event.data;
  try {
    if (!booted) {
      importScripts(new URL(cfg.indexURL + "pyodide.js", base).href, new URL("boot.js", base).href);
      booted = bootPython(cfg, base);
    }
    const py = await booted;
    self.postMessage({ type: "ready", timings: py.timings });
    let last = performance.now();
    const times = [];
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
  } catch (error) {
    self.postMessage({ type: "error", message: String(error) });
  }
};
