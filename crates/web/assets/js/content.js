// The explanations, the quiz and the interview view. Every answer links to a lesson or to the
// explorer, so a claim can be checked by running it. Each quiz question's two answers are of
// about the same length: the right one is not the longer one.

export default {
  how: [
    'A Kafka partition is an append-only log. Each record gets the next offset — its position in that one partition, nothing more: not a time, and meaningless in another partition. The log end offset (LEO) is the offset the next record will get; the log start offset is the oldest one still kept. Reading moves nothing and deletes nothing.',
    'A consumer keeps its position in memory: the next offset its poll will fetch. Its group keeps a committed offset in the coordinator: the next offset to read after a restart, written as a record in the compacted __consumer_offsets topic under the key (group, topic, partition). The position moves with every poll; the committed offset moves only with a commit. A crash forgets the position and keeps the commit.',
    'So the question is always: when does the commit happen relative to your processing? Before it, a crash between commit and processing skips records for good (at-most-once). After it, a crash between processing and commit makes the next process read them again (at-least-once). Auto-commit only chooses the moment for you — differently in the Java client (inside poll, for what earlier polls returned) and in librdkafka (a timer, for what poll handed over).',
    'A replay is only as harmful as your sink lets it be. An append-only ledger turns each replayed record into another row. A table written by a natural key absorbs the replay. Writing the next offset in the same database transaction as the rows — and seeking to it on start — makes output and progress one fact that cannot disagree.',
    'Because the log stays, rewinding is a feature: a new consumer group starts at offset 0 and builds a new projection from history, and an existing group can be reset to a time to redo six hours of bad processing. The blast radius of such a reset is exactly the records between the new and the old committed offset.',
  ],
  principles: [
    { title: 'Commit is a bookmark, not an acknowledgement.', text: 'Kafka never deletes a record because it was read; the committed offset only says where the group will resume.', run: { lesson: 5 } },
    { title: 'A commit ahead of your processing loses records on a crash.', text: 'Timer auto-commit and commit-before-processing can both move the bookmark past records your code never finished.', run: { lesson: 1 } },
    { title: 'A commit after your processing replays records on a crash.', text: 'At-least-once is the default outcome; the window between the sink write and the commit decides how many come back.', run: { lesson: 2 } },
    { title: 'Make the sink idempotent, or transactional.', text: 'Upsert by a natural key converges; offsets stored with the rows never disagree with them.', run: { lesson: 3 } },
    { title: 'Rewinding rebuilds.', text: 'Reset a group to the earliest offset, or to a timestamp, and the log replays itself — copies into a ledger, convergence into a keyed table.', run: { lesson: 4 } },
    { title: 'Same setting, different client, different loss.', text: 'enable.auto.commit in Java and in librdkafka commit different offsets at different moments.', run: { lesson: 10 } },
  ],
  quiz: [
    {
      question: 'Once a consumer group has read a record, Kafka deletes it.',
      options: ['False: it stays until retention deletes its whole segment', 'True: a record read by its group is removed from the log'],
      correct: 0,
      explanation: 'Reading only moves positions and commits. Retention (by age or size) deletes whole segments, independently of every group. That is why another group can start from offset 0.',
      run: { lesson: 5 },
    },
    {
      question: 'With enable.auto.commit=true, records can never be lost.',
      options: ['True: auto-commit only ever commits processed records', 'False: librdkafka commits what it handed over, done or not'],
      correct: 1,
      explanation: 'librdkafka stores an offset when poll hands you the record and a timer commits it. Kill the process after the timer fired and before your handler finished: those records are skipped for good, with no error.',
      run: { lesson: 1 },
    },
    {
      question: 'Committing after processing gives exactly-once.',
      options: ['Yes, as long as the commit itself is synchronous', 'No: a crash before the commit replays what was written'],
      correct: 1,
      explanation: 'The sink write and the commit are two systems; a crash between them replays records. Exactly-once needs an idempotent or transactional sink.',
      run: { lesson: 2 },
    },
    {
      question: 'An offset tells you when a record was written.',
      options: ['No: it is a position; the timestamp is a separate field', 'Yes: offsets grow with time, so they order writes by time'],
      correct: 0,
      explanation: 'Offsets of different partitions are unrelated, and an offset carries no time. To go back to "06:00", Kafka looks up the first record whose timestamp is at or after it.',
      run: { lesson: 8 },
    },
    {
      question: 'The Java client and librdkafka behave the same with auto-commit on.',
      options: ['No: Java commits inside poll(), librdkafka on a timer', 'Yes: both follow the same enable.auto.commit setting'],
      correct: 0,
      explanation: 'Java commits in poll() what earlier polls returned: with processing finished before the next poll it is at-least-once. librdkafka commits from a timer what it handed over, and can skip in-flight records.',
      run: { lesson: 10 },
    },
    {
      question: 'After a consumer crashes, the group hands its partitions to another member right away.',
      options: ['Yes: the coordinator notices the lost connection at once', 'No: they stay stalled until session.timeout.ms passes'],
      correct: 1,
      explanation: 'Only a graceful close sends LeaveGroup. A killed process just stops heartbeating, and the coordinator waits for its session to time out (45 s by default) before it rebalances — even a restarted process waits.',
      run: { lesson: 7 },
    },
    {
      question: 'An upsert sink never receives duplicate deliveries.',
      options: ['False: records still come again; the upsert makes it harmless', 'True: writing by key stops the consumer redelivering them'],
      correct: 0,
      explanation: 'Redeliveries are a property of the consumer and its commits; the sink decides whether they grow rows. The audit shows both: redeliveries > 0, duplicate rows = 0.',
      run: { lesson: 3 },
    },
    {
      question: 'Commit-before-processing, commit-after and auto-commit differ only in speed.',
      options: ['Yes: what is lost or duplicated is the same for all three', 'No: crash each at every instant and they lose or duplicate'],
      correct: 1,
      explanation: 'The explorer does exactly that for every strategy and sink: commit-before and timer auto-commit lose, commit-after duplicates into a ledger, the transactional sink does neither.',
      run: { explorer: true },
    },
    {
      question: 'With Kafka transactions, consumers never see the output of an aborted transaction.',
      options: ['True: an abort deletes the transaction’s records from the log', 'Only read_committed ones: read_uncommitted readers apply it'],
      correct: 1,
      explanation: 'Aborted records stay in the log — they already have offsets. An ABORT marker tells read_committed readers to drop them; read_uncommitted readers apply them. read_committed readers also wait at the last stable offset while a transaction is open.',
      run: { lesson: 9 },
    },
    {
      question: 'Every offset of a partition holds a record an application can read.',
      options: ['No: transaction markers take offsets no application is handed', 'Yes: offsets count records, so each one is a readable record'],
      correct: 0,
      explanation: 'A COMMIT or ABORT marker is a control record with its own offset; consumers step over it (and compaction leaves gaps too). That is also why a consumer that commits "last record processed + 1" shows a lag of 1 at the end of a transactional topic.',
      run: { lesson: 9 },
    },
    {
      question: 'In a share group, acknowledging a record deletes it from the topic.',
      options: ['True: a share group is a queue, so an accepted record is gone', 'False: only its delivery state changes; the log keeps the record'],
      correct: 1,
      explanation: 'A share group keeps a state per record (acquired, acknowledged, archived) beside the log, on the partition leader. The log is not touched: a consumer group on the same topic still reads every record from offset 0, and only retention deletes.',
      run: { lesson: 12 },
    },
    {
      question: 'When a consumer joins a group, every member stops until the rebalance completes.',
      options: ['Always: any rebalance pauses the whole group', 'Not with Kafka 4’s consumer protocol'],
      correct: 1,
      explanation: 'With group.protocol=consumer (KIP-848) members heartbeat and the coordinator reconciles them one by one: a partition that moves is revoked by its owner’s next poll and handed over on the new owner’s next heartbeat; the others keep being read. A commit carries the member epoch, and a stale one is refused.',
      run: { lesson: 13 },
    },
  ],
  interview: {
    question: 'What is a consumer offset, and how does it let a consumer replay events it has already processed?',
    depths: [
      {
        title: 'Basics',
        answer: 'An offset is a record’s position in a partition. The consumer group stores the offset of the next record it wants — its bookmark. The log is not emptied by reading, so moving the bookmark back makes the group read the same records again.',
        run: { lesson: 5 },
      },
      {
        title: 'Solid',
        answer: 'Each partition is an ordered, append-only log; offsets are increasing integers within it (consecutive in a plain topic; compaction and transaction markers leave gaps). The group commits "last processed + 1" to the compacted __consumer_offsets topic, keyed by group, topic and partition, and resumes there after a restart or a rebalance. Records stay for the retention period, so a group can seek to the earliest offset, a specific offset or a timestamp and reprocess — to backfill a new service or redo work after a bug fix. When you commit relative to processing decides at-most-once versus at-least-once.',
        run: { lesson: 8 },
      },
      {
        title: 'Deeper',
        answer: 'Position (in the client) and committed offset (in the coordinator) are different things, and the gap between them is where crashes lose or duplicate. Auto-commit semantics differ by client; async commits can be lost; a crash stalls partitions until the session times out and the new owner starts from the committed offset; commits from an old generation are fenced. Replay is safe only with idempotent writes or with offsets stored transactionally alongside the output — in the sink’s database, or, Kafka to Kafka, in a Kafka transaction whose consumers read with read_committed — and an offset reset should be dry-run first to see its blast radius.',
        run: { explorer: true },
      },
    ],
    followups: [
      { q: 'Where is the committed offset stored?', a: 'As a record in __consumer_offsets, a compacted topic keyed by (group, topic, partition); the coordinator’s view is the latest value per key.', run: { lesson: 1 } },
      { q: 'What happens to offsets when a consumer crashes mid-batch?', a: 'Its position is gone; the committed offset remains. Whatever was processed after the last commit is read again.', run: { lesson: 2 } },
      { q: 'How would you reprocess the last six hours?', a: 'Stop the group, dry-run reset-offsets to that datetime to see what will replay, execute it, and make sure the sink tolerates the replay.', run: { lesson: 8 } },
      { q: 'How do you get exactly-once into a database?', a: 'Idempotent writes by a natural key, or store the offsets in the same transaction as the rows and seek to them on start.', run: { lesson: 3 } },
      { q: 'And from Kafka to Kafka?', a: 'A transactional producer sends the output and the consumed offsets (sendOffsetsToTransaction) in one transaction; a crash aborts it, and downstream consumers with read_committed never see the aborted output.', run: { lesson: 9 } },
    ],
    redflags: [
      { claim: 'Kafka removes the message once it is acknowledged.', why: 'That is a queue. Kafka keeps records until retention; offsets are bookmarks — and a share group’s acknowledgements change a record’s state, never the log.', run: { lesson: 12 } },
      { claim: 'Auto-commit means I can never lose messages.', why: 'Timer-based auto-commit commits what was handed over, not what was processed.', run: { lesson: 1 } },
      { claim: 'Committing after processing gives exactly-once.', why: 'It gives at-least-once; duplicates arrive after every crash between the write and the commit.', run: { lesson: 2 } },
      { claim: 'Offsets are timestamps, so I can compare them across partitions.', why: 'Offsets are per-partition positions; time lives in the record timestamp.', run: { lesson: 8 } },
    ],
  },
};
