//! The signals that ask the process to stop: Ctrl-C (SIGINT) from a terminal, and SIGTERM from
//! a service manager, a container runtime or `kill`. Both get the same orderly stop — a lab's
//! state is saved, a cluster run closes its consumers and deletes what it created — where the
//! default SIGTERM would end the process on the spot.

/// Resolves when the process is asked to stop.
pub async fn requested() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    () = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => ctrl_c.await,
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}
