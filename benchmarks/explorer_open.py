"""Size and opening time of the explorer page of one baby-GPT training step, in headless Chromium.

    python benchmarks/explorer_open.py [--repeats 5] [--screenshots docs/explorer]

Writes the page of `microtensor explore` (the baby preset: 4 blocks, width 128, batch
12 x 64, every op; and --depth 1) into a temporary folder, then opens each --repeats times in
Debian's `chromium` driven by Playwright at 1920 x 1080 and reports the median time from
navigation until the page has drawn its graph (the script sets data-ready on <body> after
drawing; one animation frame more is waited so the SVG is painted), as Playwright's wall clock
sees it and as the page's own clock (performance.now() at drawn, from navigation start) does.
With --screenshots it also saves the docs' pictures: the graph during a backward step, the
panel of an attention A node, and lecture mode.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

READY = ("() => new Promise(done => requestAnimationFrame(() => "
         "requestAnimationFrame(() => done(document.body.dataset.ready))))")


def write_pages(folder):
    pages = {}
    for name, flags in (("every op", []), ("depth 1", ["--depth", "1"])):
        path = os.path.join(folder, name.replace(" ", "_") + ".html")
        subprocess.run([sys.executable, "-m", "models.cli", "explore", "--output", path] + flags,
                       check=True, stdout=subprocess.DEVNULL)
        pages[name] = path
    return pages


def open_time(browser, path):
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    start = time.perf_counter()
    page.goto("file://" + os.path.abspath(path))
    page.wait_for_selector("body[data-ready='1']")
    page.evaluate(READY)
    seconds = time.perf_counter() - start
    in_page = int(page.evaluate("document.body.dataset.readyMs")) / 1000
    page.close()
    if errors:
        raise SystemExit(f"console errors in {path}: {errors}")
    return seconds, in_page


def screenshots(browser, path, folder):
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    page.goto("file://" + os.path.abspath(path))
    page.wait_for_selector("body[data-ready='1']")
    # the backward step at the attention weights A of the last block
    step = page.evaluate("""() => {
        const d = JSON.parse(document.getElementById('mt-data').textContent);
        const a = d.backward.findIndex(i => d.nodes[i].role === 'A');
        return d.forward.length + a; }""")
    for _ in range(step + 1):
        page.keyboard.press("ArrowRight")
    page.evaluate(READY)
    page.screenshot(path=os.path.join(folder, "graph.png"))
    page.locator("#panel").screenshot(path=os.path.join(folder, "attention_panel.png"))
    page.keyboard.press("l")
    page.wait_for_timeout(300)
    page.screenshot(path=os.path.join(folder, "lecture.png"))
    page.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--screenshots", metavar="DIR")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        pages = write_pages(folder)
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=["--no-sandbox"], headless=True)
        print(f"chromium {browser.version}, {os.cpu_count()} CPUs")
        for name, path in pages.items():
            runs = [open_time(browser, path) for _ in range(args.repeats)]
            times, in_page = [r[0] for r in runs], [r[1] for r in runs]
            print(f"baby GPT, {name}: {os.path.getsize(path) / 1e6:.2f} MB, opens and draws in "
                  f"{statistics.median(times):.2f} s (median of {args.repeats}; "
                  f"min {min(times):.2f}, max {max(times):.2f}); the page's own clock from "
                  f"navigation to drawn: {statistics.median(in_page):.2f} s")
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            screenshots(browser, pages["every op"], args.screenshots)
        browser.close()


if __name__ == "__main__":
    main()
