//! `small ui` in a real headless Chromium: `ci/ui_browser.py` (Playwright for Python) drives
//! the page served by the real binary. It runs with the interpreter named by
//! `SMALL_TEST_BROWSER_PYTHON` (a virtual environment with `playwright`); without it the test
//! is skipped visibly (suite `browser`). `SMALL_UI_SCREENSHOTS=DIR` makes the script save
//! screenshots there.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_page_works_in_a_real_browser() {
    let Some(python) = std::env::var_os("SMALL_TEST_BROWSER_PYTHON").filter(|p| !p.is_empty())
    else {
        small_testkit::skip("browser", "SMALL_TEST_BROWSER_PYTHON is not set");
        return;
    };
    let chromium =
        std::env::var("SMALL_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !std::path::Path::new(&chromium).exists() {
        small_testkit::skip("browser", &format!("{chromium} does not exist"));
        return;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ci/ui_browser.py");
    // A primitives store for the lineage checks, and a 2.0.0 workspace when the corpus is here.
    let store_dir = tempfile::tempdir().unwrap();
    let store = store_dir.path().join("primitives.db");
    crate::ui_store::fill(small_store::open(store.to_str().unwrap()).unwrap().as_ref());
    let v2_dir = tempfile::tempdir().unwrap();
    let case = small_testkit::conformance_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/v2/cases/wf-single-session"
    ));
    let mut cmd = Command::new(python);
    cmd.env("SMALL_UI_STORE", &store);
    if let Some(case) = &case {
        crate::conformance_v2::copy_case_links(case, v2_dir.path());
        cmd.env("SMALL_UI_V2", v2_dir.path());
    }
    let out = cmd
        .arg(&script)
        .env("SMALL_BIN", env!("CARGO_BIN_EXE_small"))
        .env("SMALL_TEST_CHROMIUM", &chromium)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ci/ui_browser.py failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // The script names each check it passed; all of them must have run.
    for check in [
        "content",
        "graph",
        "filter",
        "live-update",
        "xss",
        "demo",
        "keyboard",
        "store-lineage",
        "store-xss",
        "methods",
        "hosts",
        // The team's page, on both profiles: a lease taken in another clone appears live.
        "team-board-v1",
        "team-claims-live-v1",
        "team-grace-v1",
        "team-unmet-v1",
        "team-task-v1",
        "team-phone-v1",
        "team-board-v2",
        "team-claims-live-v2",
        "team-grace-v2",
        "team-unmet-v2",
        "team-task-v2",
        "team-v2-details",
        "team-phone-v2",
    ]
    .into_iter()
    .chain(case.as_ref().map(|_| "v2-timeline"))
    {
        assert!(
            stdout.contains(&format!("ok {check}")),
            "{check} did not run\n{stdout}"
        );
    }
}
