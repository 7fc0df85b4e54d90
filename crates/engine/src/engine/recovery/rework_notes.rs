//! The notes of a rework task (spec §2.5): the parent's notes plus one sentence naming why the
//! earlier attempts failed, built once per attempt (issue 39): a rework of a rework carries its
//! parent's sentence forward as one, never the same sentence twice.
//!
//! Not for: when a rework is made (`recovery`), the prompt's list of failed attempts
//! (`runner::prompts`).

const LEAD: &str = "Earlier attempts at this task failed (";
const ONE: &str = "). Fix the cause of that failure first.";
const MANY: &str = "). Fix the cause of these failures first.";

/// `parent` (a task's notes) with its rework sentence, if any, replaced by one naming every
/// distinct reason so far, oldest first, `why` last.
pub(super) fn rework_notes(parent: &str, why: &str) -> String {
    let mut kept = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    for paragraph in parent.trim_end().split("\n\n") {
        let earlier = paragraph
            .strip_prefix(LEAD)
            .and_then(|rest| rest.strip_suffix(ONE).or_else(|| rest.strip_suffix(MANY)));
        match earlier {
            Some(list) => reasons.extend(list.split("; then ").map(str::to_string)),
            None if paragraph.trim().is_empty() => {}
            None => kept.push(paragraph.to_string()),
        }
    }
    reasons.push(why.to_string());
    let mut distinct: Vec<String> = Vec::new();
    for reason in reasons {
        if !distinct.contains(&reason) {
            distinct.push(reason);
        }
    }
    let end = if distinct.len() == 1 { ONE } else { MANY };
    kept.push(format!("{LEAD}{}{end}", distinct.join("; then ")));
    kept.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::rework_notes;

    #[test]
    fn a_rework_of_a_rework_says_each_reason_once() {
        let once = "Earlier attempts at this task failed (test_failure). Fix the cause of that failure first.";
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str)] = &[
            ("", "test_failure", once),
            ("Use the metric system.", "test_failure", &format!("Use the metric system.\n\n{once}")),
            // The same reason again: the sentence once.
            (once, "test_failure", once),
            (&format!("Keep it short.\n\n{once}"), "test_failure", &format!("Keep it short.\n\n{once}")),
            // A new reason: one sentence naming both, oldest first.
            (once, "policy_violation", "Earlier attempts at this task failed (test_failure; then policy_violation). Fix the cause of these failures first."),
            ("Earlier attempts at this task failed (test_failure; then policy_violation). Fix the cause of these failures first.", "test_failure",
             "Earlier attempts at this task failed (test_failure; then policy_violation). Fix the cause of these failures first."),
        ];
        for (parent, why, want) in cases {
            let got = rework_notes(parent, why);
            assert_eq!(got, *want, "{parent:?} + {why}");
            assert_eq!(got.matches("Earlier attempts").count(), 1, "{got}");
        }
    }
}
