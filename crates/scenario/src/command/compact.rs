one_name_command!(Compact, "compact", topic: "topic", |lab, name| lab.compact_topic(name));
