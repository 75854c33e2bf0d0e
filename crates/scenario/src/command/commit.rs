one_name_command!(Commit, "commit", consumer: "consumer name", |lab, name| lab.commit(name));
