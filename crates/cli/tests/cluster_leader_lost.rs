//! On three Apache Kafka brokers (`scripts/test.sh` starts them: see `brokers/mod.rs` for how
//! this test is run, and skipped only outside the test command): a broker that leads one of a
//! run's partitions is killed (SIGKILL) in the middle of the run. The run stops at the first
//! line that needs that partition, says which partition lost its leader and which broker it
//! was, exits 3, and still deletes everything it created. The killed broker is neither the
//! controller (node 1) nor the group's coordinator, so what the run meets is the partition.
//!
//! It kills a broker: the cluster is of no further use to another test, and the test command
//! runs this one last, alone.

mod brokers;

use brokers::{cluster, text};
use std::io::{BufRead, Read};

#[test]
fn three_brokers_a_leader_killed_mid_run_stops_the_run_saying_so_and_it_cleans_up() {
    let Some(k) = cluster() else { return };
    let (prefix, coordinator) = k.prefix_coordinated("lost", "g", |node| node != 1);
    let victim = if coordinator == 2 { 3 } else { 2 };
    let via = k.addr[&1].clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("leader-lost.scn");
    // Twelve records over three partitions (one led by each broker); the first poll takes
    // six, the next the other six — from every partition the first did not finish.
    std::fs::write(
        &file,
        "topic orders partitions=3\n\
         produce orders count=4 partition=0\n\
         produce orders count=4 partition=1\n\
         produce orders count=4 partition=2\n\
         consumer c1 group=g topic=orders commit=manual-batch max-poll=6 sink=append reset=earliest session-timeout=6s\n\
         poll c1\n\
         process c1 count=all\n\
         tick 4s\n\
         poll c1\n\
         process c1 count=all\n\
         expect lost=0 sink-rows=12\n",
    )
    .expect("write");
    let topic = format!("{prefix}orders");
    let group = format!("{prefix}g");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args([
            "run",
            &file.display().to_string(),
            "--bootstrap-server",
            &via,
            "--prefix",
            &prefix,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = Vec::new();
    for line in stdout.by_ref().lines() {
        let line = line.expect("stdout");
        let tick = line == "$ tick 4s";
        seen.push(line);
        if tick {
            break;
        }
    }
    assert_eq!(seen.last().map(String::as_str), Some("$ tick 4s"), "{seen:?}");
    // The rest of what it prints, read to its end (a closed pipe would stop it otherwise).
    let rest = std::thread::spawn(move || stdout.lines().map_while(Result::ok).collect::<Vec<String>>());
    // The partitions are on three brokers; the victim leads one of them.
    let leaders = k.leaders(1, &topic);
    let lost: Vec<i32> = leaders
        .iter()
        .filter(|(_, &l)| l == victim)
        .map(|(&p, _)| p)
        .collect();
    assert_eq!(lost.len(), 1, "{leaders:?}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &k.pid[&victim].to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let started = std::time::Instant::now();
    let o = child.wait_with_output().expect("the run");
    seen.extend(rest.join().expect("stdout"));
    let out = format!("stdout: {seen:#?}\n{}", text(&o));
    eprintln!(
        "the run stopped {:.1} s after broker {victim} was killed, saying:\n{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(3), "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the cluster lost the leader of a partition of this run"),
        "{out}"
    );
    let partition = format!("{topic}-{}", lost[0]);
    let broker = [
        format!("{partition}'s leader, broker {victim} at {}", k.addr[&victim]),
        format!("{partition} has no leader (its replicas, on broker(s) [{victim}]"),
    ];
    assert!(broker.iter().any(|b| err.contains(b.as_str())), "{out}");
    assert!(!err.contains("warning: cleaning up"), "{out}");
    // Everything the run created is gone, asked of the brokers still up.
    assert!(!k.topics(1).contains(&topic), "{out}");
    assert!(!k.groups(1).contains(&group), "{out}");
}
