#!/usr/bin/env python3
"""`small ui` in a real headless Chromium (Playwright for Python).

Run by the `ui_browser` test of the CLI suite with SMALL_BIN (the `small` binary) and
SMALL_TEST_CHROMIUM (default /usr/bin/chromium). Prints `ok <check>` for each check passed;
any failure raises. With SMALL_UI_SCREENSHOTS=DIR, saves screenshots of the page there (light
and dark, and the team's page at desktop and phone widths).
"""

import json
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


def small(cwd, *args, env=None):
    out = subprocess.run([SMALL, *args], cwd=cwd, capture_output=True, text=True,
                         env={**os.environ, "NO_COLOR": "1", **(env or {})})
    assert out.returncode == 0, f"small {args}: {out.stdout}{out.stderr}"
    return out.stdout


GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


def git(cwd, *args):
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=GIT_ENV)
    assert out.returncode == 0, f"git {args}: {out.stderr}"
    return out.stdout


class Ui:
    def __init__(self, cwd, *args):
        self.proc = subprocess.Popen([SMALL, "ui", *args], cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True,
                                     env={**GIT_ENV, "RUST_LOG": "warn"})
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
                assert page.locator("#board li[data-task]").count() == 3
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
        check_team(browser, v2=False)
        check_team(browser, v2=True)
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


# The team's page (issue 52): a bare remote and two clones; clone a's page is open while
# clone b claims tasks. Titles, in plan order: task-1 … task-6.
TEAM_TITLES = [
    "Set up the schema",
    "Admin dashboard billing page with charts, filters and exports for the finance team",
    "Invoice e-mails",
    "Reports",
    "Payment provider",
    "Placeholder",
]


def team_scene(top, v2):
    """Clone a (the page's) and clone b of one remote; task-1 completed, task-2 and task-4
    ready, task-3 waiting on task-2, task-5 blocked, task-6 cancelled; 2.0.0: migrated in
    collaborative mode, a session per clone with actor and model labels."""
    remote = os.path.join(top, "remote.git")
    git(top, "init", "-q", "--bare", remote)
    a = os.path.join(top, "a")
    git(top, "clone", "-q", remote, a)
    small(a, "init", "--intent", "Ship the billing dashboard", "--task", TEAM_TITLES[0])
    for title in TEAM_TITLES[1:]:
        small(a, "plan", "--add", title)
    small(a, "plan", "--depends", "task-2:task-1", "--depends", "task-3:task-2",
          "--depends", "task-4:task-1")
    small(a, "checkpoint", "--task", "task-1", "--status", "completed", "--evidence",
          "cargo test passed")
    small(a, "progress", "add", "--task", "task-5", "--status", "blocked", "--evidence",
          "sandbox refused the key", "--notes", "waiting for the provider's API keys")
    small(a, "plan", "--blocked", "task-5")
    small(a, "plan", "--cancel", "task-6")
    if v2:
        git(a, "add", "-A")
        git(a, "commit", "-q", "-m", "v1")
        plan = json.loads(small(a, "migrate", "--to", "2.0.0", "--preview", "--namespace", "team",
                                "--mode", "collaborative", "--json"))
        path = os.path.join(top, "migration.json")
        with open(path, "w") as f:
            json.dump(plan, f)
        small(a, "migrate", "--apply", path, "--expect-state", plan["expected_input_digest"])
    else:
        small(a, "handoff", "--summary", "Schema done; the dashboard is next")
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "plan")
    git(a, "push", "-q", "origin", "HEAD")
    b = os.path.join(top, "b")
    git(top, "clone", "-q", remote, b)
    if v2:
        small(a, "session", "start", "--label", "lead", "--actor-label", "alice",
              "--model-label", "model-a")
        small(b, "session", "start", "--label", "worker", "--actor-label", "bob",
              "--model-label", "model-b")
    return a, b


def column(page, key):
    return page.locator(f"#board [data-column='{key}'] li").evaluate_all(
        "els => els.map(e => e.dataset.task)")


def check_team(browser, v2):
    name = "v2" if v2 else "v1"
    with tempfile.TemporaryDirectory() as top:
        a, b = team_scene(top, v2)
        ui = Ui(a, "--lease-refresh", "1")
        try:
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(ui.url)
            page.wait_for_selector("html[data-live='1']", timeout=10000)
            # The heading is the intent; the folder is the subtitle.
            assert page.inner_text("h1") == "Ship the billing dashboard", page.inner_text("h1")
            assert page.inner_text(".subtitle .folder") == "a"
            # Five columns; cancelled and meta/* tasks are neither on the board nor counted.
            assert column(page, "ready") == ["task-2", "task-4"], column(page, "ready")
            assert column(page, "in_progress") == [], column(page, "in_progress")
            assert column(page, "waiting") == ["task-3"], column(page, "waiting")
            assert column(page, "blocked") == ["task-5"], column(page, "blocked")
            assert column(page, "completed") == ["task-1"], column(page, "completed")
            reason = page.inner_text("#board [data-column='blocked'] li .reason")
            assert "API keys" in reason, reason
            summary = page.inner_text("#summary")
            assert "1/5" in summary, summary
            # The next task: the first ready one nobody holds, with its title.
            nxt = page.inner_text("#next-task")
            assert "task-2" in nxt and "Admin dashboard billing" in nxt, nxt
            assert "No leases seen" in page.inner_text("#claims")
            # The overview timeline leaves bookkeeping out and gives relative times.
            recent = page.inner_text("#timeline")
            assert "Added dependency" not in recent and "Added task" not in recent, recent
            assert page.locator("#timeline time.rel").count() >= 1
            assert page.locator("#timeline time.rel[title*='UTC']").count() >= 1
            print(f"ok team-board-{name}")

            # Clone b claims the next task: the open page shows it without a reload.
            updates = page.evaluate("document.documentElement.dataset.updates || '0'")
            out = json.loads(small(b, "claim", "--next", "--json", env={"SMALL_AGENT": "bob-agent"}))
            assert out["task"] == "task-2", out
            t0 = time.monotonic()
            page.wait_for_selector("#claims tr[data-task='task-2']", timeout=10000)
            took = time.monotonic() - t0
            row = page.inner_text("#claims tr[data-task='task-2']")
            assert "bob-agent" in row and "Admin dashboard" in row, row
            assert re.search(r"\b(29|30)m left\b", row), row
            assert "met" in page.inner_text("#claims tr[data-task='task-2'] td:last-child")
            assert page.evaluate("document.documentElement.dataset.updates || '0'") != updates
            page.wait_for_selector("#board [data-column='in_progress'] li[data-task='task-2']",
                                   timeout=5000)
            chip = page.inner_text(
                "#board [data-column='in_progress'] li[data-task='task-2'] .holder")
            assert "bob-agent" in chip, chip
            assert column(page, "ready") == ["task-4"], column(page, "ready")
            # The holder has its own line inside the graph box.
            node = page.locator("svg.graph a.node[data-task='task-2']")
            claim_line = node.locator("text.nclaim")
            assert "bob-agent" in claim_line.text_content()
            box = node.locator("rect").bounding_box()
            line = claim_line.bounding_box()
            assert line["x"] >= box["x"] and line["x"] + line["width"] <= box["x"] + box["width"], (box, line)
            assert line["y"] >= box["y"] and line["y"] + line["height"] <= box["y"] + box["height"], (box, line)
            page.wait_for_selector("#next-task:has-text('task-4')", timeout=5000)
            print(f"ok team-claims-live-{name} ({took * 1000:.0f} ms)")

            # A short lease: it counts down in the browser, then reads "in grace period"
            # (never "ending left"), while the next task moves on.
            small(b, "claim", "task-4", "--ttl", "3s", env={"SMALL_AGENT": "carol-agent"})
            page.wait_for_selector("#claims tr[data-task='task-4']", timeout=10000)
            page.wait_for_selector("#claims tr[data-task='task-4'] .left[data-state='grace']",
                                   timeout=10000)
            left = page.inner_text("#claims tr[data-task='task-4'] .left")
            assert left == "in grace period", left
            assert "ending left" not in page.inner_text("main")
            assert "none free" in page.inner_text("#next-task") or \
                "task-4" not in page.inner_text("#next-task")
            print(f"ok team-grace-{name}")

            # A claim taken too early (task-3 waits on task-2) is flagged.
            small(b, "claim", "task-3", env={"SMALL_AGENT": "dave-agent"})
            page.wait_for_selector("#claims tr[data-task='task-3'] .deps.unmet", timeout=10000)
            assert "not met" in page.inner_text("#claims tr[data-task='task-3']")
            print(f"ok team-unmet-{name}")

            # The task page names the holder and counts what it lists.
            page.goto(ui.url + "w/0/task/task-2")
            assert "bob-agent" in page.inner_text(".task-facts .holder")
            page.goto(ui.url + "w/0/task/task-1")
            listed = page.locator("ol.timeline li.entry").count()
            count = page.inner_text(".task-facts .entries")
            assert count.startswith(f"{listed} "), (count, listed)
            print(f"ok team-task-{name}")

            if v2:
                page.goto(ui.url)
                rows = page.inner_text("table.sessions")
                assert "alice" in rows and "model-a" in rows, rows
                assert "1970-01-01" not in page.inner_text("main")
                page.goto(ui.url + "w/0/timeline")
                heads = page.locator("ol.timeline li.entry .head").evaluate_all(
                    "els => els.map(e => e.firstElementChild.tagName + ' ' + e.textContent)")
                assert heads, heads
                for h in heads:
                    assert h.startswith("TIME ") or h.startswith("SPAN —"), h
                    assert "legacy-import-complete" not in h.split(" ")[1], h
                assert "1970-01-01" not in page.inner_text("main")
                assert page.locator("ol.timeline .head .actor:has-text('alice')").count() >= 1
                print("ok team-v2-details")

            # A phone: the page never scrolls sideways; tables and the graph scroll inside.
            phone = browser.new_context(viewport={"width": 390, "height": 844},
                                        device_scale_factor=1)
            small_page = phone.new_page()
            for path in ("", "w/0/timeline", "w/0/task/task-2", "w/0/runs"):
                small_page.goto(ui.url + path)
                width = small_page.evaluate("document.documentElement.scrollWidth")
                assert width <= 390, (path, width)
            print(f"ok team-phone-{name}")
            if SHOTS:
                os.makedirs(SHOTS, exist_ok=True)
                page.goto(ui.url)
                page.wait_for_selector("html[data-live='1']", timeout=10000)
                page.screenshot(path=os.path.join(SHOTS, f"team-{name}-desktop.png"))
                small_page.goto(ui.url)
                small_page.screenshot(path=os.path.join(SHOTS, f"team-{name}-phone.png"))
            assert not errors, errors
            phone.close()
            ctx.close()
        finally:
            ui.close()


if __name__ == "__main__":
    sys.exit(main())
