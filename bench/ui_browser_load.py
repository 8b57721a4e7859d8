#!/usr/bin/env python3
"""Page loads of `small ui` in headless Chromium (Playwright for Python), for `small-bench ui
--browser PYTHON`.

Usage: ui_browser_load.py URL RUNS APPENDS SMALL DIR
Loads URL + `w/0/` and URL + `w/0/timeline` RUNS times each in a fresh page and reports the
median of the Navigation Timing marks (domContentLoaded, load: milliseconds from the start of
the navigation); then, on the open workspace page, runs `SMALL progress add` APPENDS times in
DIR and times each from the command's exit to the new entry being in the page. Prints one
JSON object. SMALL_TEST_CHROMIUM names the browser (default /usr/bin/chromium).
"""

import json
import os
import statistics
import subprocess
import sys
import time

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("SMALL_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMING = """() => { const n = performance.getEntriesByType('navigation')[0];
  return [n.domContentLoadedEventEnd - n.startTime, n.loadEventEnd - n.startTime,
          n.responseEnd - n.requestStart]; }"""


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


def main():
    url, runs, appends, small, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        sys.argv[4], sys.argv[5]
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        for name, path in (("workspace", "w/0/"), ("timeline", "w/0/timeline")):
            dcl, load, resp = [], [], []
            for _ in range(runs):
                page = browser.new_page()
                page.goto(url + path, wait_until="load")
                d, l, r = page.evaluate(TIMING)
                dcl.append(d)
                load.append(l)
                resp.append(r)
                page.close()
            out[name] = {"domContentLoaded_ms": statistics.median(dcl),
                         "load_ms": statistics.median(load),
                         "response_ms": statistics.median(resp)}
        page = browser.new_page()
        page.goto(url + "w/0/")
        page.wait_for_selector("html[data-live='1']", timeout=20000)
        lat = []
        for i in range(appends):
            text = f"browser append {i} {time.time_ns()}"
            subprocess.run([small, "progress", "add", "--task", "task-1", "--status",
                            "in_progress", "--evidence", text], cwd=work, check=True,
                           capture_output=True)
            t0 = time.monotonic()
            page.wait_for_selector(f"#timeline li.entry:has-text('{text}')", timeout=20000)
            lat.append((time.monotonic() - t0) * 1000)
            time.sleep(0.15)
        if lat:
            out["live"] = {"p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95),
                           "max_ms": max(lat), "appends": len(lat)}
        browser.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
