//! The page templates and assets, embedded in the binary (no build step, no CDN).
//!
//! minijinja escapes every value rendered into a template whose name ends in `.html`; the
//! templates never mark a value safe.

use minijinja::{AutoEscape, Environment};
use serde::Serialize;

pub const CSS: &str = include_str!("../assets/ui.css");
pub const JS: &str = include_str!("../assets/ui.js");

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../templates/base.html")),
    ("overview.html", include_str!("../templates/overview.html")),
    (
        "workspace.html",
        include_str!("../templates/workspace.html"),
    ),
    ("task.html", include_str!("../templates/task.html")),
    ("timeline.html", include_str!("../templates/timeline.html")),
    ("runs.html", include_str!("../templates/runs.html")),
    ("error.html", include_str!("../templates/error.html")),
    ("_card.html", include_str!("../templates/_card.html")),
    ("_summary.html", include_str!("../templates/_summary.html")),
    ("_intent.html", include_str!("../templates/_intent.html")),
    ("_graph.html", include_str!("../templates/_graph.html")),
    ("_board.html", include_str!("../templates/_board.html")),
    ("_claims.html", include_str!("../templates/_claims.html")),
    ("_chip.html", include_str!("../templates/_chip.html")),
    ("_when.html", include_str!("../templates/_when.html")),
    (
        "_timeline.html",
        include_str!("../templates/_timeline.html"),
    ),
    ("_handoff.html", include_str!("../templates/_handoff.html")),
    ("_checks.html", include_str!("../templates/_checks.html")),
    ("_runs.html", include_str!("../templates/_runs.html")),
    ("_task.html", include_str!("../templates/_task.html")),
    ("store.html", include_str!("../templates/store.html")),
    ("_store.html", include_str!("../templates/_store.html")),
    ("artifact.html", include_str!("../templates/artifact.html")),
    (
        "_artifact.html",
        include_str!("../templates/_artifact.html"),
    ),
    ("_lineage.html", include_str!("../templates/_lineage.html")),
];

pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    /// `has_store`: the pages link to the primitives store.
    pub fn new(has_store: bool) -> Result<Templates, String> {
        let mut env = Environment::new();
        env.add_global("has_store", has_store);
        // Every template is HTML: escape everything, whatever the name.
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
        for (name, src) in TEMPLATES {
            env.add_template(name, src)
                .map_err(|e| format!("template {name}: {e}"))?;
        }
        Ok(Templates { env })
    }

    pub fn render<S: Serialize>(&self, name: &str, ctx: S) -> Result<String, String> {
        let t = self
            .env
            .get_template(name)
            .map_err(|e| format!("template {name}: {e}"))?;
        t.render(ctx).map_err(|e| {
            let mut msg = format!("template {name}: {e}");
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            msg
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_and_values_are_escaped() {
        let t = Templates::new(false).unwrap();
        let html = t
            .render(
                "error.html",
                minijinja::context! { title => "x", message => "<script>alert(1)</script>" },
            )
            .unwrap();
        assert!(html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"));
        assert!(!html.contains("<script>alert"));
    }

    #[test]
    fn no_template_has_inline_script_or_style() {
        for (name, src) in TEMPLATES {
            assert!(!src.contains(" style="), "{name} has a style attribute");
            assert!(!src.contains("<style"), "{name} has a style element");
            let scripts = src.matches("<script").count();
            let external = src.matches("<script src=").count();
            assert_eq!(scripts, external, "{name} has an inline script");
            assert!(!src.contains("|safe"), "{name} marks a value safe");
            // No event handler attribute (` onclick=`, ` onload=`, ...).
            for (i, _) in src.match_indices(" on") {
                let rest = &src[i + 3..];
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .collect();
                assert!(
                    !rest[word.len()..].starts_with('='),
                    "{name} has an event handler attribute"
                );
            }
        }
    }
}
