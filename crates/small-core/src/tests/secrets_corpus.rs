//! The labelled secrets corpus (src/tests/secrets_corpus/): every true positive placed in every
//! string field of every artifact must be reported by the lint's secrets rule (INV1) with
//! the expected format, at the right path, and never repeated in the diagnostic; no false
//! positive may be reported anywhere. Prints precision and recall; requires 100% / 100%.

use crate::diag::Diagnostic;
use crate::gates::invariants::check_secrets;
use crate::spec::consts::ArtifactKind;
use crate::yaml::{parse_str, Limits};

const TRUE_POSITIVES: &str = include_str!("secrets_corpus/true_positives.txt");
const FALSE_POSITIVES: &str = include_str!("secrets_corpus/false_positives.txt");

/// `(class or format, text, secret)`: marks removed, `\n` unescaped.
fn cases(file: &str) -> Vec<(String, String, Option<String>)> {
    file.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (label, text) = l.split_once('\t').expect("label<TAB>text");
            let text = text.replace(['⟨', '⟩'], "").replace("\\n", "\n");
            let secret = text
                .split_once('«')
                .and_then(|(_, rest)| rest.split_once('»'))
                .map(|(s, _)| s.to_string());
            (label.to_string(), text.replace(['«', '»'], ""), secret)
        })
        .collect()
}

/// Every string field of every artifact: (artifact, JSON pointer, document with `@V`).
const FIELDS: &[(ArtifactKind, &str, &str)] = &[
    (ArtifactKind::Intent, "/intent", "small_version: \"1.0.0\"\nowner: \"human\"\nintent: @V\nscope:\n  include: []\n  exclude: []\nsuccess_criteria: []\n"),
    (ArtifactKind::Intent, "/scope/include/0", "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"x\"\nscope:\n  include:\n    - @V\n  exclude: []\nsuccess_criteria: []\n"),
    (ArtifactKind::Intent, "/scope/exclude/0", "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"x\"\nscope:\n  include: []\n  exclude: [@V]\nsuccess_criteria: []\n"),
    (ArtifactKind::Intent, "/success_criteria/0", "small_version: \"1.0.0\"\nowner: \"human\"\nintent: \"x\"\nscope:\n  include: []\n  exclude: []\nsuccess_criteria:\n  - @V\n"),
    (ArtifactKind::Constraints, "/constraints/0/rule", "small_version: \"1.0.0\"\nowner: \"human\"\nconstraints:\n  - id: \"c1\"\n    rule: @V\n    severity: \"error\"\n"),
    (ArtifactKind::Plan, "/tasks/0/title", "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: @V\n"),
    (ArtifactKind::Plan, "/tasks/0/description", "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: \"t\"\n    description: @V\n"),
    (ArtifactKind::Plan, "/tasks/0/notes", "small_version: \"1.0.0\"\nowner: \"agent\"\ntasks:\n  - id: \"task-1\"\n    title: \"t\"\n    notes: @V\n"),
    (ArtifactKind::Progress, "/entries/0/evidence", "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    evidence: @V\n"),
    (ArtifactKind::Progress, "/entries/0/command", "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    command: @V\n"),
    (ArtifactKind::Progress, "/entries/0/notes", "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    evidence: \"ok\"\n    notes: @V\n"),
    (ArtifactKind::Progress, "/entries/0/test", "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    test: @V\n"),
    (ArtifactKind::Progress, "/entries/0/verification", "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    verification: @V\n"),
    (ArtifactKind::Progress, "/entries/0/link", "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    link: @V\n"),
    (ArtifactKind::Progress, "/entries/0/commit", "small_version: \"1.0.0\"\nowner: \"agent\"\nentries:\n  - task_id: \"task-1\"\n    timestamp: \"2026-01-02T15:04:05.123Z\"\n    commit: @V\n"),
    (ArtifactKind::Handoff, "/summary", "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: @V\nresume:\n  current_task_id: null\n  next_steps: []\nlinks: []\n"),
    (ArtifactKind::Handoff, "/resume/next_steps/0", "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"s\"\nresume:\n  current_task_id: null\n  next_steps:\n    - @V\nlinks: []\n"),
    (ArtifactKind::Handoff, "/links/0", "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"s\"\nresume:\n  current_task_id: null\n  next_steps: []\nlinks: [@V]\n"),
    (ArtifactKind::Handoff, "/notes", "small_version: \"1.0.0\"\nowner: \"agent\"\nsummary: \"s\"\nresume:\n  current_task_id: null\n  next_steps: []\nlinks: []\nnotes: @V\n"),
];

fn lint(kind: ArtifactKind, template: &str, text: &str) -> Vec<Diagnostic> {
    // A JSON string is a YAML double-quoted scalar.
    let quoted = serde_json::to_string(text).unwrap();
    let src = template.replace("@V", &quoted);
    let doc = parse_str(&src, &Limits::default()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut out = Vec::new();
    check_secrets(kind, &doc.root, true, &mut out);
    out
}

#[test]
fn corpus_precision_and_recall() {
    let tps = cases(TRUE_POSITIVES);
    let fps = cases(FALSE_POSITIVES);
    assert!(tps.len() >= 80 && fps.len() >= 80, "corpus too small");
    let (mut found, mut missed, mut false_alarms) = (0usize, Vec::new(), Vec::new());
    let mut leaks = Vec::new();
    for (format, text, secret) in &tps {
        let secret = secret.as_deref().expect("a true positive marks its secret");
        for (kind, path, template) in FIELDS {
            let diags = lint(*kind, template, text);
            let hit = diags.iter().find(|d| d.path.as_deref() == Some(*path));
            match hit {
                Some(d) if d.secret.as_ref().is_some_and(|s| s.kind == *format) => found += 1,
                Some(d) => missed.push(format!(
                    "{format} in {kind:?}{path}: reported as {:?}: {text}",
                    d.secret.as_ref().map(|s| &s.kind)
                )),
                None => missed.push(format!("{format} in {kind:?}{path}: {text}")),
            }
            for d in &diags {
                if d.path.as_deref() != Some(*path) {
                    false_alarms.push(format!(
                        "{}: {}",
                        d.path.as_deref().unwrap_or(""),
                        d.message
                    ));
                }
                // Never printed: the second half of the secret appears nowhere.
                let tail = &secret[secret.len() / 2..];
                let note = d.secret.as_ref().map(|s| s.masked.as_str()).unwrap_or("");
                let shown = format!("{} {} {note}", d.message, d.help.as_deref().unwrap_or(""));
                if shown.contains(tail) {
                    leaks.push(shown);
                }
            }
        }
    }
    for (class, text, _) in &fps {
        for (kind, path, template) in FIELDS {
            for d in lint(*kind, template, text) {
                false_alarms.push(format!("{class} in {kind:?}{path}: {} ({text})", d.message));
            }
        }
    }
    let reported = found + false_alarms.len();
    let total = tps.len() * FIELDS.len();
    let precision = if reported == 0 {
        1.0
    } else {
        found as f64 / reported as f64
    };
    let recall = found as f64 / total as f64;
    let formats = {
        let mut f: Vec<&str> = tps.iter().map(|t| t.0.as_str()).collect();
        f.sort();
        f.dedup();
        f.len()
    };
    // The figures, said with any failure (docs/rules.md quotes them).
    let summary = format!(
        "secrets corpus: {} true positives ({formats} formats) and {} false positives, each in {} fields; \
         precision {:.2}% ({found} of {reported} reports), recall {:.2}% ({found} of {total})",
        tps.len(),
        fps.len(),
        FIELDS.len(),
        precision * 100.0,
        recall * 100.0
    );
    // One line per case (the same text fails in every field alike).
    let show = |v: &[String]| {
        let mut seen = std::collections::BTreeSet::new();
        v.iter()
            .filter(|l| seen.insert(l.rsplit_once(": ").map_or(l.as_str(), |x| x.1).to_string()))
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        missed.is_empty(),
        "{summary}\n{} missed:\n{}",
        missed.len(),
        show(&missed)
    );
    assert!(
        false_alarms.is_empty(),
        "{summary}\n{} false alarms:\n{}",
        false_alarms.len(),
        show(&false_alarms)
    );
    assert!(leaks.is_empty(), "secrets printed:\n{}", show(&leaks));
}
