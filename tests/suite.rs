//! Every integration test in one binary (issue 54): each former test file is a module here,
//! so the crate and its dependencies are linked once, not once per file ("delete cargo
//! integration tests"). Each module keeps its tests' names and says in its own doc what it is
//! for; `common` is what they share.
//! Run one file's tests with `cargo test --test suite <module>::`, e.g. `attacks_view::`.

mod common;
/// The worked example of docs/eval.md, shared by the eval tests.
#[path = "eval/example.rs"]
mod eval_example;

mod action;
mod agent_adapters;
mod agent_behaviour;
mod agent_config;
mod agent_texts;
mod architecture;
mod attacks;
mod attacks_credentials;
mod attacks_door;
mod attacks_escape;
mod attacks_network;
mod attacks_view;
mod check_runs;
mod ci_gate;
mod ci_start;
mod cli;
mod convergence;
mod conversation;
mod conversation_bad_input;
mod conversation_lifecycle;
mod demo;
mod docs;
mod docs_pictures;
mod egress;
mod eval;
mod eval_outcomes;
mod eval_real_model;
mod fallback_executors;
mod field_polish;
mod first_hour;
mod first_run;
mod github_mode;
mod github_people;
mod github_server;
mod handed_back;
mod init_doctor;
mod install_script;
mod judge_loop;
mod local_loop;
mod local_model;
mod newcomer;
mod people_last_word;
mod permissions;
mod planner;
mod providers;
mod real_agent_clis;
mod real_agent_sessions;
mod real_model;
mod research;
mod rounds;
mod safe_outputs;
mod state_branch;
mod state_chunks;
mod stopping;
mod threat_scan;
mod workspace;
