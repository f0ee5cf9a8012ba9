//! Counting the commands a handle sends, with the driver's command monitoring: by name
//! and target collection (`sv.<start>`, `sr.<resolution>` for partition collections),
//! and the bytes of the commands that write.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use tickertape_mongodb::options::ConfigureClient;

/// Commands sent while `on`, by name and target collection; connection handshakes and
/// session housekeeping are not the store's requests.
#[derive(Default)]
pub struct Counter {
    on: AtomicBool,
    seen: Mutex<Vec<(String, String)>>,
    /// Bytes of the write commands (`insert`, `update`, `delete`, `findAndModify`) sent.
    written: Mutex<u64>,
    /// The same bytes by command and target collection.
    written_by: Mutex<BTreeMap<(String, String), u64>>,
}

impl Counter {
    pub fn hook(self: &Arc<Self>) -> ConfigureClient {
        let counter = self.clone();
        ConfigureClient(Arc::new(move |options: &mut ClientOptions| {
            let counter = counter.clone();
            options.command_event_handler =
                Some(EventHandler::callback(move |event: CommandEvent| {
                    let CommandEvent::Started(started) = event else {
                        return;
                    };
                    let name = started.command_name.as_str();
                    let ignored = ["hello", "isMaster", "ismaster", "endSessions"];
                    if !counter.on.load(Ordering::SeqCst) || ignored.contains(&name) {
                        return;
                    }
                    // A partition collection as `sv.<start>` or `sr.<resolution>`; `getMore` names
                    // its collection apart.
                    let field = if name == "getMore" {
                        "collection"
                    } else {
                        name
                    };
                    let target = started
                        .command
                        .get_str(field)
                        .map(|c| c.split('.').take(2).collect::<Vec<_>>().join("."))
                        .unwrap_or_default();
                    if matches!(name, "insert" | "update" | "delete" | "findAndModify") {
                        let bytes = mongodb::bson::to_vec(&started.command).map_or(0, |b| b.len());
                        *counter.written.lock().unwrap_or_else(|p| p.into_inner()) += bytes as u64;
                        *counter
                            .written_by
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .entry((name.to_owned(), target.clone()))
                            .or_default() += bytes as u64;
                    }
                    let mut seen = counter.seen.lock().unwrap_or_else(|p| p.into_inner());
                    seen.push((name.to_owned(), target));
                }));
        }))
    }

    /// Runs `work` with counting on; returns the commands it sent.
    pub async fn count<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> (T, Vec<(String, String)>) {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.on.store(true, Ordering::SeqCst);
        let out = work.await;
        self.on.store(false, Ordering::SeqCst);
        let seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()));
        (out, seen)
    }
}

/// "3 × insert sv.7, 1 × update pending": counts by command and collection (`sv.<token>`
/// for value partitions).
pub fn breakdown(seen: &[(String, String)]) -> String {
    let mut by: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (name, target) in seen {
        *by.entry((name, target)).or_default() += 1;
    }
    by.iter()
        .map(|((name, target), n)| format!("{n} × {name} {target}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Counter {
    /// Bytes of write commands sent while counting, since the last call.
    pub fn take_written(&self) -> u64 {
        std::mem::take(&mut *self.written.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Counter {
    /// "61,234 B insert sv.…, …": bytes of write commands by command and collection,
    /// since the last call.
    #[allow(dead_code)]
    pub fn take_written_by(&self) -> String {
        let by = std::mem::take(&mut *self.written_by.lock().unwrap_or_else(|p| p.into_inner()));
        let mut rows: Vec<_> = by.into_iter().collect();
        rows.sort_by_key(|row| std::cmp::Reverse(row.1));
        rows.iter()
            .map(|((name, target), bytes)| format!("{bytes} B {name} {target}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
