"""Fixtures of the course site's browser tests (issue 34): Pyodide and the rest fetched from the
package registries once per session (`course --fetch-pyodide`), the site built on that copy,
served by `course --serve` on 127.0.0.1, and one Chromium page that loads it once and is shared
by every test of the module. Every request that is not for 127.0.0.1 is aborted and noted:
`outside` lists them, and the tests assert that it stays empty.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest
from mt_testing import CHROMIUM_MISSING

from models.cli.main import main


@pytest.fixture(scope="session")
def course_assets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pyodide")
    assert main(["course", "--fetch-pyodide", str(folder)]) == 0, "course --fetch-pyodide failed"
    return folder


@pytest.fixture(scope="session")
def course_site(course_assets, tmp_path_factory):
    folder = tmp_path_factory.mktemp("site") / "course"
    assert main(["course", "--output", str(folder), "--pyodide", str(course_assets)]) == 0
    return folder


@pytest.fixture(scope="session")
def course_url(course_site):
    """The address `course --serve --port 0` prints; the server stops after the session."""
    server = subprocess.Popen([sys.executable, "-m", "models.cli", "course", "--serve",
                               str(course_site), "--port", "0"], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = server.stdout.readline()
        assert "http://127.0.0.1:" in line, f"expected the server's address; got {line!r}"
        yield line.split(" at ")[1].split()[0]
    finally:
        server.terminate()
        server.wait(timeout=10)


class Course:
    """The page, the requests that tried to leave 127.0.0.1, and the load time."""

    def __init__(self, page, outside, load_s):
        self.page, self.outside, self.load_s = page, outside, load_s


@pytest.fixture(scope="module")
def course(course_url):
    """One page of the served site at 1366×768, `microtensorReady` awaited. Module-scoped:
    Playwright's sync API allows one running instance, and the viz tests start their own."""
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip(CHROMIUM_MISSING)
    outside = []

    def only_local(route):
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"],
                                    headless=True)
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        context.route("**/*", only_local)
        page = context.new_page()
        page.set_default_timeout(180_000)
        start = time.perf_counter()
        page.goto(course_url)
        page.evaluate("async () => { await window.microtensorReady; }")
        yield Course(page, outside, time.perf_counter() - start)
        browser.close()
