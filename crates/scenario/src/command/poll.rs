one_name_command!(Poll, "poll", consumer: "consumer name", |lab, name| lab.poll(name));
