//! The `opentiger` binary, kept thin: answer git's askpass call and stop; else, before any thread
//! or child exists, take the tokens out of the environment, hide the runner's `/proc` files and
//! become a child subreaper, then run the command and sweep what it left running.
//! Not for: arguments, commands and exit codes (`cli`), the tokens and the askpass answer
//! (`credentials`), or how orphans are ended (`reaper`).

fn main() {
    // git runs this binary as its GIT_ASKPASS for an https push or fetch: answer and stop.
    let args: Vec<String> = std::env::args().collect();
    if let Some(answer) = opentiger::credentials::answer_askpass(&args, |k| std::env::var(k).ok()) {
        match answer {
            Ok(text) => println!("{text}"),
            Err(message) => {
                eprintln!("{message}");
                std::process::exit(1);
            }
        }
        return;
    }
    // Before any thread or child exists: the token leaves the environment, and no process of
    // this user may read our memory or environment through /proc.
    opentiger::credentials::take_from_env();
    opentiger::sandbox::protect_runner();
    // Every process an agent or a check starts is re-parented to us when orphaned, so the end of
    // its run can end it too (`reaper`).
    opentiger::reaper::become_subreaper();
    let code = opentiger::cli::main();
    // Nothing this command's programs left running (a git's background process) outlives it.
    opentiger::reaper::sweep();
    std::process::exit(code);
}
