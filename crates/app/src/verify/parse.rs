//! Command text → argv, without a shell (spec seeds/worker.md §7, spec §2.3.2 "Per command").
//! Word splitting is the shell's (quotes, backslash escapes, backslash-newline); leading
//! `KEY=value` words become the environment; an unquoted `&&` separates commands run in turn,
//! stopping at the first failure. The rest of a shell (other operators, substitutions, `$NAME`,
//! builtins) is refused, saying what to write instead; globs, `~` and `#` pass on as they are.
//! Not for: which commands run and which are denied (`verify`), or running them (`runner::checks`).

use std::fmt;

use super::CommandSpec;

/// Why a command cannot run without a shell. Every message names the command and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("the verification command is empty; remove it or write the command to run")]
    Empty,
    #[error(
        "`{command}` has `&&` with no command on one side; write a command on both sides of `&&`"
    )]
    EmptyPiece { command: String },
    #[error(
        "`{command}` names no program to run (only environment variables, or an empty word); \
         write the program after the variables, e.g. `FOO=1 cargo test`"
    )]
    NoProgram { command: String },
    #[error("cannot run `{command}`: {operator}")]
    Operator {
        command: String,
        operator: ShellOperator,
    },
    #[error(
        "cannot run `{command}`: `{found}` would be expanded by a shell, and commands run without \
         one; write the value itself, or set a variable for the command with a leading \
         `KEY=value` word"
    )]
    Expansion { command: String, found: String },
    #[error("cannot run `{command}`: a {quote} quote is never closed; close it")]
    UnterminatedQuote { command: String, quote: Quote },
    #[error("cannot run `{command}`: it ends with a `\\` that escapes nothing; remove it")]
    TrailingBackslash { command: String },
    #[error(
        "cannot run `{command}`: `{builtin}` is a shell builtin; commands run without a shell \
         ({})", builtin_fix(.builtin)
    )]
    Builtin { command: String, builtin: String },
}

/// The kind of quote left open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quote {
    Single,
    Double,
}

impl fmt::Display for Quote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quote::Single => f.write_str("single (')"),
            Quote::Double => f.write_str("double (\")"),
        }
    }
}

/// A shell operator found outside quotes (or, for substitutions, inside double quotes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellOperator {
    Pipe,
    Or,
    Semicolon,
    Background,
    RedirectIn,
    RedirectOut,
    Backtick,
    Substitution,
    Subshell,
    LineBreak,
}

impl ShellOperator {
    /// How the operator is shown in a message.
    pub fn as_str(self) -> &'static str {
        match self {
            ShellOperator::Pipe => "`|`",
            ShellOperator::Or => "`||`",
            ShellOperator::Semicolon => "`;`",
            ShellOperator::Background => "`&`",
            ShellOperator::RedirectIn => "`<`",
            ShellOperator::RedirectOut => "`>`",
            ShellOperator::Backtick => "a backtick (`)",
            ShellOperator::Substitution => "`$(`",
            ShellOperator::Subshell => "a parenthesis",
            ShellOperator::LineBreak => "a line break",
        }
    }

    fn fix(self) -> &'static str {
        match self {
            ShellOperator::Pipe => {
                "split into separate commands, or put the pipeline in a script file and run that"
            }
            ShellOperator::Or => {
                "put the fallback in a script file and run that; a failing command fails the run"
            }
            ShellOperator::Semicolon | ShellOperator::LineBreak => {
                "split into separate commands, or join them with `&&`"
            }
            ShellOperator::Background => {
                "remove the `&`; verification commands run in the foreground and must finish"
            }
            ShellOperator::RedirectIn | ShellOperator::RedirectOut => {
                "remove the redirection (the runner captures output itself), or put it in a \
                 script file and run that"
            }
            ShellOperator::Backtick | ShellOperator::Substitution => {
                "write the value itself, or put the steps in a script file and run that"
            }
            ShellOperator::Subshell => {
                "split into separate commands, or put the group in a script file and run that"
            }
        }
    }
}

impl fmt::Display for ShellOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "found {}. Shell operators are not allowed: commands run without a shell; {}",
            self.as_str(),
            self.fix()
        )
    }
}

/// Programs that only mean something inside a shell; run as argv they fail or do nothing.
const BUILTINS: &[&str] = &[
    "cd", "source", ".", "export", "set", "unset", "alias", "eval", "exec", "exit", "ulimit",
    "umask", "shopt", "trap",
];

fn builtin_fix(builtin: &str) -> &'static str {
    match builtin {
        "cd" => {
            "every command runs in the repository root; use the tool's own directory option, \
             such as `make -C dir` or `npm --prefix dir`, or put the steps in a script file \
             and run that"
        }
        "export" | "set" | "unset" => {
            "set environment variables with leading `KEY=value` words, e.g. `FOO=1 cargo test`"
        }
        _ => "put the steps in a script file and run that",
    }
}

/// Parses one verification command, split on unquoted `&&` into the commands to run in order.
pub fn parse_command(text: &str) -> Result<Vec<CommandSpec>, CommandError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(CommandError::Empty);
    }
    let pieces = Lexer::new(trimmed).pieces()?;
    let several = pieces.len() > 1;
    pieces
        .into_iter()
        .map(|piece| build_spec(trimmed, several, piece))
        .collect()
}

/// The words of one `&&`-separated piece and its text.
struct Piece {
    text: String,
    words: Vec<Word>,
}

struct Word {
    text: String,
    /// Starts with an unquoted `NAME=`: an environment assignment when it leads the command.
    assignment: bool,
}

fn build_spec(command: &str, several: bool, piece: Piece) -> Result<CommandSpec, CommandError> {
    if piece.words.is_empty() {
        return Err(if several {
            CommandError::EmptyPiece {
                command: command.to_string(),
            }
        } else {
            CommandError::Empty
        });
    }
    let mut words = piece.words.into_iter().peekable();
    let mut env = Vec::new();
    while let Some(word) = words.next_if(|word| word.assignment) {
        if let Some((key, value)) = word.text.split_once('=') {
            env.push((key.to_string(), value.to_string()));
        }
    }
    let program = match words.next() {
        Some(word) if !word.text.is_empty() => word.text,
        Some(_) | None => {
            return Err(CommandError::NoProgram {
                command: command.to_string(),
            })
        }
    };
    if BUILTINS.contains(&program.as_str()) {
        return Err(CommandError::Builtin {
            command: command.to_string(),
            builtin: program,
        });
    }
    Ok(CommandSpec {
        program,
        args: words.map(|word| word.text).collect(),
        env,
        text: piece.text,
    })
}

fn is_name(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A `$` followed by this starts an expansion (`$NAME`, `${NAME}`).
fn starts_expansion(c: Option<char>) -> bool {
    matches!(c, Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '{')
}

struct Lexer<'a> {
    text: &'a str,
    chars: Vec<(usize, char)>,
    i: usize,
    pieces: Vec<Piece>,
    piece_start: usize,
    words: Vec<Word>,
    word: Option<WordBuilder>,
}

#[derive(Default)]
struct WordBuilder {
    text: String,
    /// Bytes at the start of `text` that came from unquoted, unescaped characters.
    plain_len: usize,
    quoted: bool,
}

impl WordBuilder {
    fn push(&mut self, c: char, plain: bool) {
        if plain && !self.quoted {
            self.plain_len += c.len_utf8();
        } else {
            self.quoted = true;
        }
        self.text.push(c);
    }

    fn finish(self) -> Word {
        let assignment = match self.text.find('=') {
            Some(eq) => eq < self.plain_len && is_name(&self.text[..eq]),
            None => false,
        };
        Word {
            text: self.text,
            assignment,
        }
    }
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Lexer<'a> {
        Lexer {
            text,
            chars: text.char_indices().collect(),
            i: 0,
            pieces: Vec::new(),
            piece_start: 0,
            words: Vec::new(),
            word: None,
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).map(|(_, c)| *c)
    }

    fn word(&mut self) -> &mut WordBuilder {
        self.word.get_or_insert_with(WordBuilder::default)
    }

    fn end_word(&mut self) {
        if let Some(word) = self.word.take() {
            self.words.push(word.finish());
        }
    }

    /// Ends the current piece at byte `end` of the text.
    fn end_piece(&mut self, end: usize) {
        self.end_word();
        self.pieces.push(Piece {
            text: self.text[self.piece_start..end].trim().to_string(),
            words: std::mem::take(&mut self.words),
        });
    }

    fn operator(&self, operator: ShellOperator) -> CommandError {
        CommandError::Operator {
            command: self.text.to_string(),
            operator,
        }
    }

    fn expansion(&self) -> CommandError {
        // Show `$NAME` or `${...}` as written, up to the end of the name.
        let rest = &self.chars[self.i..];
        let found: String = match rest.get(1) {
            Some((_, '{')) => rest
                .iter()
                .map(|(_, c)| *c)
                .take_while(|c| *c != '}')
                .chain(Some('}'))
                .collect(),
            _ => rest
                .iter()
                .enumerate()
                .take_while(|(n, (_, c))| *n == 0 || c.is_ascii_alphanumeric() || *c == '_')
                .map(|(_, (_, c))| *c)
                .collect(),
        };
        CommandError::Expansion {
            command: self.text.to_string(),
            found,
        }
    }

    fn pieces(mut self) -> Result<Vec<Piece>, CommandError> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' => {
                    self.end_word();
                    self.i += 1;
                }
                '\n' | '\r' => return Err(self.operator(ShellOperator::LineBreak)),
                '&' if self.peek(1) == Some('&') => {
                    let at = self.chars[self.i].0;
                    self.end_piece(at);
                    self.i += 2;
                    self.piece_start = at + 2;
                }
                '&' => return Err(self.operator(ShellOperator::Background)),
                '|' if self.peek(1) == Some('|') => return Err(self.operator(ShellOperator::Or)),
                '|' => return Err(self.operator(ShellOperator::Pipe)),
                ';' => return Err(self.operator(ShellOperator::Semicolon)),
                '<' => return Err(self.operator(ShellOperator::RedirectIn)),
                '>' => return Err(self.operator(ShellOperator::RedirectOut)),
                '`' => return Err(self.operator(ShellOperator::Backtick)),
                '(' | ')' => return Err(self.operator(ShellOperator::Subshell)),
                '$' if self.peek(1) == Some('(') => {
                    return Err(self.operator(ShellOperator::Substitution))
                }
                '$' if starts_expansion(self.peek(1)) => return Err(self.expansion()),
                '\\' => self.backslash()?,
                '\'' => self.single_quoted()?,
                '"' => self.double_quoted()?,
                c => {
                    self.word().push(c, true);
                    self.i += 1;
                }
            }
        }
        self.end_piece(self.text.len());
        Ok(self.pieces)
    }

    fn backslash(&mut self) -> Result<(), CommandError> {
        match self.peek(1) {
            // A backslash-newline joins lines, as in a shell.
            Some('\n') => self.i += 2,
            Some('\r') if self.peek(2) == Some('\n') => self.i += 3,
            Some(next) => {
                self.word().push(next, false);
                self.i += 2;
            }
            None => {
                return Err(CommandError::TrailingBackslash {
                    command: self.text.to_string(),
                })
            }
        }
        Ok(())
    }

    fn single_quoted(&mut self) -> Result<(), CommandError> {
        self.word().quoted = true;
        self.i += 1;
        loop {
            match self.peek(0) {
                None => {
                    return Err(CommandError::UnterminatedQuote {
                        command: self.text.to_string(),
                        quote: Quote::Single,
                    })
                }
                Some('\'') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(c) => {
                    self.word().push(c, false);
                    self.i += 1;
                }
            }
        }
    }

    fn double_quoted(&mut self) -> Result<(), CommandError> {
        self.word().quoted = true;
        self.i += 1;
        loop {
            match self.peek(0) {
                None => {
                    return Err(CommandError::UnterminatedQuote {
                        command: self.text.to_string(),
                        quote: Quote::Double,
                    })
                }
                Some('"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some('\\') => match self.peek(1) {
                    Some(escaped @ ('"' | '\\' | '$' | '`')) => {
                        self.word().push(escaped, false);
                        self.i += 2;
                    }
                    Some('\n') => self.i += 2,
                    Some(_) | None => {
                        self.word().push('\\', false);
                        self.i += 1;
                    }
                },
                Some('`') => return Err(self.operator(ShellOperator::Backtick)),
                Some('$') if self.peek(1) == Some('(') => {
                    return Err(self.operator(ShellOperator::Substitution))
                }
                Some('$') if starts_expansion(self.peek(1)) => return Err(self.expansion()),
                Some(c) => {
                    self.word().push(c, false);
                    self.i += 1;
                }
            }
        }
    }
}
