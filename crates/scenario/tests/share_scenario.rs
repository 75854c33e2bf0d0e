//! The share-group story of `scenarios/share-groups.scn` runs on the model and every `expect`
//! line in it holds; each of its lines reads back as written.

use offsetlab_scenario::runner::run_source;
use offsetlab_scenario::{Command, Script};

const STORY: &str = include_str!("../../../scenarios/share-groups.scn");

#[test]
fn the_share_group_story_holds() {
    if let Err(e) = run_source(STORY) {
        panic!("{e}");
    }
}

#[test]
fn every_line_of_the_story_reads_back_as_written() {
    let script = Script::parse(STORY).expect("parses");
    for line in &script.lines {
        let again = Command::parse(&line.command.to_string())
            .expect("re-parses")
            .expect("a command");
        assert_eq!(line.command, again, "line {}", line.number);
    }
}
