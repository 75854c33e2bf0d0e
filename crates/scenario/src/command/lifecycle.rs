one_name_command!(Crash, "crash", consumer: "consumer name", |lab, name| lab.crash(name));
one_name_command!(Restart, "restart", consumer: "consumer name", |lab, name| lab.restart(name));
one_name_command!(Close, "close", consumer: "consumer name", |lab, name| lab.close(name));
