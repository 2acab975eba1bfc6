// Starts Python in this tab or in a worker: Pyodide, its numpy (sha256 checked against
// pyodide-lock.json by Pyodide), the pure-Python wheels, then microtensor's packages from
// microtensor.zip (written by `microtensor course --output`; models/course/site.py).
// onStep(name) is called as each step starts: "Pyodide", "numpy", "microtensor".
async function bootPython(cfg, base, onStep = () => {}) {
  const url = (path) => new URL(path, base).href;
  const t0 = performance.now();
  onStep("Pyodide (Python compiled to WebAssembly, ~14 MB)");
  const py = await loadPyodide({ indexURL: url(cfg.indexURL) });
  const tCore = performance.now();
  onStep("numpy (3 MB)");
  await py.loadPackage("numpy", { messageCallback: () => {} });
  const tNumpy = performance.now();
  onStep("microtensor (its packages and the graphviz and tqdm wheels)");
  const site = py.runPython("import site; site.getsitepackages()[0]");
  if (cfg.wheels) {
    for (const wheel of cfg.wheels) {
      const data = await (await fetch(url(wheel))).arrayBuffer();
      py.unpackArchive(data, "wheel", { extractDir: site });
    }
  } else {
    await py.loadPackage("micropip", { messageCallback: () => {} });
    await py.pyimport("micropip").install(cfg.pypi);
  }
  const zip = await (await fetch(url(cfg.packages))).arrayBuffer();
  py.unpackArchive(zip, "zip", { extractDir: site });
  py.runPython("import microtensor, nn, models, viz\nfrom models.course import runtime");
  const tDone = performance.now();
  py.timings = { core: tCore - t0, numpy: tNumpy - tCore, microtensor: tDone - tNumpy,
                 total: tDone - t0 };
  return py;
}
