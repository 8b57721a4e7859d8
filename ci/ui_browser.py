#!/usr/bin/env python3
"""`small ui` in a real headless Chromium (Playwright for Python).

Run by the `ui_browser` test of the CLI suite with SMALL_BIN (the `small` binary) and
SMALL_TEST_CHROMIUM (default /usr/bin/chromium). Prints `ok <check>` for each check passed;
any failure raises. With SMALL_UI_SCREENSHOTS=DIR, saves screenshots of the page there (light
and dark).
"""

import os
import re
import subprocess
import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

SMALL = os.environ["SMALL_BIN"]
CHROMIUM = os.environ.get("SMALL_TEST_CHROMIUM", "/usr/bin/chromium")
SHOTS = os.environ.get("SMALL_UI_SCREENSHOTS")
# A primitives store (SQLite file) and a 2.0.0 workspace prepared by the calling test.
STORE = os.environ.get("SMALL_UI_STORE")
V2 = os.environ.get("SMALL_UI_V2")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # A name that resolves to the loopback address, as a rebinding attacker's would.
    "--host-resolver-rules=MAP rebind.invalid 127.0.0.1",
]


def small(cwd, *args):
    subprocess.run([SMALL, *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "NO_COLOR": "1"})


class Ui:
    def __init__(self, cwd, *args):
        self.proc = subprocess.Popen([SMALL, "ui", *args], cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True,
                                     env={**os.environ, "RUST_LOG": "warn"})
        line = self.proc.stdout.readline()
        m = re.match(r"listening on (http://\S+/)$", line.strip())
        assert m, f"first line: {line!r}"
        self.url = m.group(1)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


def hostile(d):
    small(d, "init", "--intent", "Intent <script>window.__xss=1</script>",
          "--task", "Title <img src=x onerror=\"window.__xss=2\">", "--task", "Second task",
          "--task", "Third task")
    small(d, "plan", "--depends", "task-2:task-1")
    small(d, "plan", "--depends", "task-3:task-2")
    small(d, "progress", "add", "--task", "task-1", "--status", "in_progress", "--evidence",
          "<img src=x onerror=\"window.__xss=3\"> <script>window.__xss=4</script>")
    small(d, "checkpoint", "--task", "task-1", "--status", "completed", "--evidence", "done",
          "--link", "https://example.com/\"><svg onload=\"window.__xss=5\">")
    small(d, "handoff", "--summary", "Handoff <script>window.__xss=6</script>")


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        errors = []
        with tempfile.TemporaryDirectory() as d:
            hostile(d)
            ui = Ui(d)
            try:
                page = browser.new_page()
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(ui.url)
                page.wait_for_selector("html[data-live='1']", timeout=10000)
                # Content.
                assert page.title().endswith("· small"), page.title()
                assert "Intent <script>window.__xss=1</script>" in page.inner_text("#intent")
                assert page.locator("#board").inner_text().count("task-") == 3
                print("ok content")
                # XSS payloads are text, never run.
                assert page.evaluate("window.__xss") is None
                assert "<img src=x" in page.inner_text("#timeline")
                print("ok xss")
                # The dependency graph: one node per task, one edge per dependency.
                nodes = page.locator("svg.graph a.node")
                assert nodes.count() == 3, nodes.count()
                edges = page.locator("svg.graph path.edge")
                assert edges.count() == 2, edges.count()
                assert "completed" in page.locator("svg.graph a.node[data-task='task-1']").text_content()
                print("ok graph")
                # Keyboard: the graph's nodes are links reachable with Tab.
                page.locator("svg.graph a.node[data-task='task-2']").focus()
                page.keyboard.press("Enter")
                page.wait_for_url(re.compile(r"/task/task-2$"))
                assert "Second task" in page.inner_text("h1")
                print("ok keyboard")
                # Live update: an entry appended by the real binary appears without a reload.
                page.goto(ui.url)
                page.wait_for_selector("html[data-live='1']", timeout=10000)
                before = page.evaluate("document.documentElement.dataset.updates || '0'")
                t0 = time.monotonic()
                small(d, "progress", "add", "--task", "task-2", "--status", "in_progress",
                      "--evidence", "appeared live")
                # (A selector, not a predicate: the page's CSP forbids evaluating strings.)
                page.wait_for_selector("#timeline li.entry:has-text('appeared live')",
                                       timeout=5000)
                took = time.monotonic() - t0
                assert took < 1.5, f"live update took {took:.2f}s"
                assert page.evaluate("document.documentElement.dataset.updates || '0'") != before
                print(f"ok live-update ({took * 1000:.0f} ms)")
                # Filtering and paging on the timeline page.
                page.goto(ui.url + "w/0/timeline")
                page.select_option("select[name=task]", "task-2")
                page.click("button[type=submit]")
                page.wait_for_url(re.compile(r"task=task-2"))
                tasks = page.locator("ol.timeline li.entry").evaluate_all(
                    "els => els.map(e => e.dataset.task)")
                assert tasks and all(t == "task-2" for t in tasks), tasks
                print("ok filter")
                # Read-only: the page's own origin cannot write through any other method.
                for method in ("POST", "PUT", "DELETE", "PATCH"):
                    status = page.evaluate(
                        f"fetch(location.href, {{method: '{method}'}}).then(r => r.status)")
                    assert status == 405, (method, status)
                print("ok methods")
                # DNS rebinding: the same server reached under another name is refused.
                rebound = ui.url.replace("127.0.0.1", "rebind.invalid")
                assert rebound != ui.url, ui.url
                other = browser.new_page()
                response = other.goto(rebound)
                assert response is not None and response.status == 403, response
                assert "Intent" not in other.content()
                other.close()
                print("ok hosts")
                assert page.evaluate("window.__xss") is None
                assert not errors, errors
            finally:
                ui.close()
        with tempfile.TemporaryDirectory() as d:
            ui = Ui(d, "--demo")
            try:
                for scheme in ("light", "dark"):
                    ctx = browser.new_context(color_scheme=scheme,
                                              viewport={"width": 1280, "height": 900})
                    page = ctx.new_page()
                    page.goto(ui.url)
                    page.wait_for_selector("html[data-live='1']", timeout=10000)
                    page.wait_for_selector("#checks .verdict", timeout=10000)
                    assert page.locator("svg.graph a.node").count() == 6
                    if SHOTS:
                        os.makedirs(SHOTS, exist_ok=True)
                        page.screenshot(path=os.path.join(SHOTS, f"workspace-{scheme}.png"))
                        page.locator("#plan").screenshot(
                            path=os.path.join(SHOTS, f"graph-{scheme}.png"))
                        page.goto(ui.url + "w/0/task/task-3")
                        page.screenshot(path=os.path.join(SHOTS, f"task-{scheme}.png"))
                    ctx.close()
                print("ok demo")
            finally:
                ui.close()
        if STORE:
            check_store(browser)
        if V2:
            check_v2(browser)
        browser.close()
    return 0


def check_store(browser):
    """The store's lineage graph: a node per artifact, an edge per derivation; no payload runs."""
    errors = []
    with tempfile.TemporaryDirectory() as d:
        ui = Ui(d, "--store", STORE)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(ui.url)
            page.wait_for_url(re.compile(r"/store$"))
            page.wait_for_selector("html[data-live='1']", timeout=10000)
            nodes = page.locator("svg.lineage a.node")
            ids = sorted(nodes.evaluate_all("els => els.map(e => e.dataset.artifact)"))
            assert ids == ["dataset-a", "evil<img>", "report-c", "summary-b"], ids
            edges = sorted(page.locator("svg.lineage path.edge").evaluate_all(
                "els => els.map(e => e.dataset.from + '>' + e.dataset.to)"))
            assert edges == ["dataset-a>report-c", "dataset-a>summary-b",
                             "report-c>evil<img>", "summary-b>report-c"], edges
            print("ok store-lineage")
            if SHOTS:
                os.makedirs(SHOTS, exist_ok=True)
                page.set_viewport_size({"width": 1280, "height": 900})
                page.screenshot(path=os.path.join(SHOTS, "store-light.png"))
            # Keyboard: a node is a link to the artifact's page.
            page.locator("svg.lineage a.node[data-artifact='evil<img>']").focus()
            page.keyboard.press("Enter")
            page.wait_for_url(re.compile(r"/store/artifact\?id="))
            assert "evil<img>" in page.inner_text("h1")
            assert "<script>window.__xss=13</script>" in page.inner_text("main")
            assert page.evaluate("window.__xss") is None
            page.goto(ui.url + "store/artifact?id=dataset-a")
            kinds = page.locator("ol.lifecycle li").evaluate_all(
                "els => els.map(e => e.dataset.event)")
            assert kinds == ["created", "validated", "published"], kinds
            assert page.evaluate("window.__xss") is None
            assert not errors, errors
            print("ok store-xss")
        finally:
            ui.close()


def check_v2(browser):
    """A 2.0.0 workspace: its events newest first, filtered by session; a new event live."""
    ui = Ui(V2)
    try:
        page = browser.new_page()
        page.goto(ui.url + "w/0/timeline")
        positions = page.locator("ol.timeline li.entry").evaluate_all(
            "els => els.map(e => +e.dataset.index)")
        assert positions and positions == sorted(positions, reverse=True), positions
        assert page.locator("text=receipt verified").count() >= 1
        sessions = page.locator("select[name=session] option").evaluate_all(
            "els => els.map(e => e.value).filter(v => v)")
        assert len(sessions) >= 2, sessions
        page.select_option("select[name=session]", sessions[0])
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r"session="))
        shown = page.locator("ol.timeline li.entry").evaluate_all(
            "els => els.map(e => e.dataset.session)")
        assert shown and all(s == sessions[0] for s in shown), shown
        print("ok v2-timeline")
    finally:
        ui.close()


if __name__ == "__main__":
    sys.exit(main())
