//! What more than one capability asks a D-Bus: whether a service is there (the availability
//! probes of the screenshot portal on the session bus and of GeoClue on the system bus).

use std::future::Future;
use std::time::Duration;

use zbus::Address;
use zbus::names::BusName;

/// Whether `name` runs on the bus at `address`, or the bus would start it on the first call.
pub(crate) async fn service_on_bus(address: &Address, name: &str) -> zbus::Result<bool> {
    let connection = zbus::connection::Builder::address(address.clone()).build().await?;
    let bus = zbus::fdo::DBusProxy::new(&connection).await?;
    if bus.name_has_owner(BusName::try_from(name)?).await? {
        return Ok(true);
    }
    Ok(bus.list_activatable_names().await?.iter().any(|activatable| activatable.as_str() == name))
}

/// Runs `query` to completion within `timeout`, from synchronous code that may itself run on
/// the async runtime (a [`crate::availability::Gate`]'s probe): on a thread of its own with its
/// own small runtime. `None` when it did not finish in time (or the thread could not start).
pub(crate) fn block_on_bounded<T: Send>(timeout: Duration, query: impl Future<Output = T> + Send) -> Option<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
                runtime.block_on(async { tokio::time::timeout(timeout, query).await.ok() })
            })
            .join()
            .ok()
            .flatten()
    })
}
