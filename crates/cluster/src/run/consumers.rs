//! A `consumer` or `restart` line on the cluster: a new agent process with the consumer's
//! settings, and the application's state for its incarnation.

use super::error::LineFailure;
use super::ClusterRun;
use crate::settings::ConsumerSettings;
use offsetlab_engine::sink::SinkFactory;

impl ClusterRun {
    /// A `consumer` line's consumer (`config`), or a `restart` line's (`None`: the model's),
    /// started at model time `t` as a new agent process; what the line did.
    pub(super) fn start(
        &mut self,
        name: &str,
        t: i64,
        config: Option<&offsetlab_engine::consumer::ConsumerConfig>,
    ) -> Result<String, LineFailure> {
        let config = match config {
            Some(c) => c.clone(),
            None => self
                .app
                .consumers
                .get(name)
                .map(|c| c.config.clone())
                .ok_or_else(|| LineFailure::Other(format!("no consumer {name}")))?,
        };
        let mut settings = ConsumerSettings::for_consumer(
            &config,
            &self.opts.bootstrap,
            &self.opts.prefix,
            &self.opts.extra,
        );
        settings.joins_later = self.model_assignment(name).is_some_and(|a| a.is_empty());
        if let Some(output) = settings
            .output_topic
            .as_ref()
            .filter(|o| !self.created.contains(o))
        {
            return Err(LineFailure::Other(format!(
                "{name}'s output topic {output} was not created by this run: a run writes only to topics it created"
            )));
        }
        let partitions = self.partitions(&config.topic);
        self.groups.insert(settings.group.clone());
        // Where the model's consumer failed for want of an offset (`reset=none`): as it joined,
        // or at its first poll.
        let failed_at_start = self
            .model
            .lab
            .consumer(name)
            .is_ok_and(|c| matches!(c.state, offsetlab_engine::consumer::ConsumerState::Failed { .. }));
        let sinks = &mut self.sinks;
        let (group, kind) = (config.group.clone(), config.sink);
        self.app.start(
            &config,
            &settings,
            &self.opts.agent_program,
            partitions,
            t,
            failed_at_start,
            || sinks.open(&group, kind),
        )?;
        Ok(format!(
            "{name} started: a librdkafka consumer in its own process, in group {}",
            settings.group
        ))
    }
}
