//! A share group's figures side by side: the model's, and those of the window a run kept from
//! the cluster's answers (`offsetlab run --compare`).

use super::super::ClusterRun;
use offsetlab_engine::share::ShareGroup;
use serde::Serialize;
use std::collections::BTreeMap;

/// A share group's figures by name, in a fixed order: each partition's SPSO and SPEO, then the
/// window's records by state and the audit's totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareGroupFigures {
    pub group: String,
    pub figures: Vec<(String, String)>,
}

impl ShareGroupFigures {
    pub fn of(g: &ShareGroup) -> Self {
        use offsetlab_engine::share::DeliveryState;
        let mut figures = Vec::new();
        for (tp, p) in &g.partitions {
            figures.push((format!("spso[{tp}]"), p.start_offset.to_string()));
            figures.push((format!("speo[{tp}]"), p.end_offset.to_string()));
        }
        let count = |s: DeliveryState| -> usize { g.partitions.values().map(|p| p.count(s)).sum() };
        let f = g.figures(|_| true);
        let in_flight: u64 = g.partitions.values().map(|p| p.in_flight()).sum();
        for (k, v) in [
            ("in-flight", in_flight),
            ("acquired", count(DeliveryState::Acquired) as u64),
            ("available", count(DeliveryState::Available) as u64),
            ("archived", f.archived),
            ("acquisitions", f.acquisitions),
            ("deliveries", f.deliveries),
            ("duplicates", f.duplicates),
            ("lost", f.lost),
            ("skipped", f.skipped),
        ] {
            figures.push((k.to_string(), v.to_string()));
        }
        Self {
            group: g.name.clone(),
            figures,
        }
    }
}

impl ClusterRun {
    /// The model's share groups' figures, and the cluster's (the windows kept from its answers,
    /// their locks brought to now), group by group in name order.
    pub fn share_figures(&mut self) -> (Vec<ShareGroupFigures>, Vec<ShareGroupFigures>) {
        let now = self.shares.now_ms();
        let mut model = Vec::new();
        let mut real = Vec::new();
        for (name, g) in &mut self.shares.groups {
            g.expire_locks(now);
            real.push(ShareGroupFigures::of(g));
            if let Ok(m) = self.model.lab.share_group(name) {
                model.push(ShareGroupFigures::of(m));
            }
        }
        (model, real)
    }
}

/// Where the cluster's share figures differ from the model's, one line each.
pub fn share_differences(model: &[ShareGroupFigures], real: &[ShareGroupFigures]) -> Vec<String> {
    let mut out = Vec::new();
    for r in real {
        let Some(m) = model.iter().find(|m| m.group == r.group) else {
            out.push(format!("share group {}: the model has no such group", r.group));
            continue;
        };
        // By name: a partition only one side started shows as `-` on the other.
        let model: BTreeMap<&str, &str> = m.figures.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let real: BTreeMap<&str, &str> = r.figures.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        for (name, mv) in &m.figures {
            let rv = real.get(name.as_str()).copied().unwrap_or("-");
            if mv != rv {
                out.push(format!(
                    "share group {}: {name}: model {mv}, cluster {rv}",
                    r.group
                ));
            }
        }
        for (name, rv) in &r.figures {
            if !model.contains_key(name.as_str()) {
                out.push(format!("share group {}: {name}: model -, cluster {rv}", r.group));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use offsetlab_engine::record::TopicPartition;
    use offsetlab_engine::share::{AcknowledgeType, ShareGroupConfig};

    fn group() -> ShareGroup {
        let mut g = ShareGroup::new("workers", ShareGroupConfig::default());
        let tp = TopicPartition::new("orders", 0);
        for o in 0..3 {
            g.handed_out(&tp, o, "s1#1", 0, 0);
        }
        g.applied(&tp, 0);
        g.acknowledged("s1#1", &tp, &[0], AcknowledgeType::Accept)
            .expect("held");
        g
    }

    #[test]
    fn a_share_groups_figures_are_named_in_a_fixed_order() {
        let f = ShareGroupFigures::of(&group());
        let names: Vec<&str> = f.figures.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(&names[..3], ["spso[orders-0]", "speo[orders-0]", "in-flight"]);
        let get = |k: &str| f.figures.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("spso[orders-0]").as_deref(), Some("1"));
        assert_eq!(get("acquired").as_deref(), Some("2"));
        assert_eq!(get("deliveries").as_deref(), Some("1"));
    }

    #[test]
    fn differences_name_the_group_and_the_figure() {
        let model = vec![ShareGroupFigures::of(&group())];
        let mut other = group();
        other.release_everything_of("s1#1");
        let real = vec![ShareGroupFigures::of(&other)];
        assert!(share_differences(&model, &model).is_empty());
        let d = share_differences(&model, &real);
        assert!(
            d.iter()
                .any(|l| l == "share group workers: acquired: model 2, cluster 0"),
            "{d:?}"
        );
        assert!(
            d.iter().any(|l| l.contains("available: model 0, cluster 2")),
            "{d:?}"
        );
        let missing = share_differences(&[], &real);
        assert_eq!(missing, ["share group workers: the model has no such group"]);
    }
}
