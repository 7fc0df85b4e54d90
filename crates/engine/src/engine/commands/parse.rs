//! Reading a comment's command line (`engine::commands::parse`): a command is a line of its
//! own that starts with `/opentiger`; quoted lines and code are not commands. Not for: what
//! the command does (`decide`).

use super::{Command, Parsed, Verb, PREFIX};

/// The first command of a comment (one command per comment: the comment id keys it), or `None`
/// when the comment holds no command line. Lines inside fenced or indented code blocks, and
/// quoted lines (`>`), are never commands: they show or cite a command, they do not give it.
pub fn parse(body: &str) -> Option<Parsed> {
    let mut fence: Option<&str> = None;
    for raw in body.lines() {
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let line = raw.trim();
        if let Some(open) = fence {
            if line.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if line.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if line.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        // Indented code (4 spaces or a tab), and quotes, at any depth.
        if indent >= 4 || raw.starts_with('\t') || line.starts_with('>') {
            continue;
        }
        let Some(rest) = line.strip_prefix(PREFIX) else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
            continue; // `/opentigers`, `/opentiger-bot`: another word
        }
        return Some(parse_words(line, rest.split_whitespace().collect()));
    }
    None
}

/// The largest budget a comment may set, in USD: a typo (`budget 50000`) or an overflow
/// (`1e308`) must not lift the limit that protects the account.
pub const MAX_BUDGET_USD: f64 = 1000.0;

fn parse_words(line: &str, words: Vec<&str>) -> Parsed {
    let malformed = |why: &str| Parsed::Malformed {
        line: line.to_string(),
        why: why.to_string(),
    };
    let Some((first, args)) = words.split_first() else {
        return Parsed::Command(Command {
            verb: Verb::Help,
            task: None,
        });
    };
    let verb = first.to_ascii_lowercase();
    let (verb, args) = match verb.as_str() {
        "approve" if args.first().is_some_and(|a| a.eq_ignore_ascii_case("all")) => {
            (Verb::ApproveAll, &args[1..])
        }
        "approve" => match args.first().and_then(|a| proposal_number(a)) {
            Some(n) => (Verb::ApproveProposal(n), &args[1..]),
            None => (Verb::Approve, args),
        },
        "retry" => (Verb::Retry, args),
        "cancel" => (Verb::Cancel, args),
        "stop" => (Verb::Stop, args),
        "pause" => (Verb::Pause, args),
        "resume" => (Verb::Resume, args),
        "status" => (Verb::Status, args),
        "replan" => (Verb::Replan, args),
        "help" => (Verb::Help, args),
        "hold" => (Verb::Hold, args),
        // `unhold` is what people try first.
        "release" | "unhold" => (Verb::Release, args),
        "budget" => {
            let Some(amount) = args.first() else {
                return malformed("`budget` needs an amount in USD, e.g. `/opentiger budget 10`");
            };
            match budget_amount(amount) {
                Ok(usd) => (Verb::Budget(usd), &args[1..]),
                Err(why) => return malformed(&why),
            }
        }
        _ => return malformed(&format!("`{first}` is not a command")),
    };
    let task = match args {
        [] => None,
        [id] if valid_task_word(id) => Some(id.trim_start_matches('#').to_string()),
        [id] => return malformed(&format!("`{id}` is not a task id")),
        [_, extra, ..] => return malformed(&format!("unexpected `{extra}`")),
    };
    if verb == Verb::Help && task.is_some() {
        return malformed("`help` takes no task");
    }
    Parsed::Command(Command { verb, task })
}

/// A research proposal's number (`approve 3`): one or two digits, never a task id (a task's id
/// is named by at least four of its characters).
fn proposal_number(word: &str) -> Option<u32> {
    let plain = (1..=2).contains(&word.len()) && word.chars().all(|c| c.is_ascii_digit());
    plain.then(|| word.parse().ok()).flatten()
}

fn valid_task_word(word: &str) -> bool {
    let id = word.trim_start_matches('#');
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A budget: a plain positive decimal number of USD (`10`, `$7.50`), at most [`MAX_BUDGET_USD`].
fn budget_amount(word: &str) -> Result<f64, String> {
    let digits = word.strip_prefix('$').unwrap_or(word);
    let plain = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.chars().filter(|c| *c == '.').count() <= 1
        && digits.chars().any(|c| c.is_ascii_digit());
    let usd = if plain {
        digits.parse::<f64>().ok()
    } else {
        None
    };
    match usd {
        Some(usd) if usd.is_finite() && usd > 0.0 && usd <= MAX_BUDGET_USD => Ok(usd),
        Some(usd) if usd > MAX_BUDGET_USD => Err(format!(
            "a budget above ${MAX_BUDGET_USD:.0} is refused from a comment; raise `budget.per_task_usd` in .opentiger.yml instead"
        )),
        _ => Err(format!(
            "`{word}` is not an amount: give a positive number of USD, e.g. `/opentiger budget 10`"
        )),
    }
}
