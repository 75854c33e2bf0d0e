one_name_command!(Abort, "abort", consumer: "consumer name", |lab, name| lab.abort_transaction(name));
