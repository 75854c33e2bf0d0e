//! UpdateFeatures (`kafka-features.sh upgrade`): the lab has no feature flags to finalize (its
//! ApiVersions lists none, so clients use each API's own versions), so a request that names one
//! is refused whole — INVALID_UPDATE_VERSION, naming the first, as Kafka refuses a feature it
//! does not know — with nothing changed.

use crate::str_bytes;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use offsetlab_wire::kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};

pub(crate) fn handle(r: &UpdateFeaturesRequest) -> UpdateFeaturesResponse {
    let Some(first) = r.feature_updates.first() else {
        return UpdateFeaturesResponse::default().with_error_code(NONE);
    };
    UpdateFeaturesResponse::default()
        .with_error_code(INVALID_UPDATE_VERSION)
        .with_error_message(Some(str_bytes(&format!(
            "the lab has no feature '{}' to update: it finalizes no features",
            first.feature.as_str()
        ))))
        .with_results(Vec::<UpdatableFeatureResult>::new())
}
